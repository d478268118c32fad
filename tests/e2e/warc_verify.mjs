// Reads a WARC with warcio (npm), the independent reader of tests/e2e/warc_test.py,
// and checks every record's digests. Usage: node warc_verify.mjs <npm prefix> <file>.
// Prints one JSON document: the records in order, each with its WARC header names in
// order, type, target, id, the HTTP status line and header names of a response, and
// whether WARC-Block-Digest and WARC-Payload-Digest match the SHA-1 recomputed here
// (block: the record's bytes as warcio reads them raw; payload: what follows the HTTP
// head that warcio parsed). Exit 1 if a record could not be read.
import { createReadStream } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [prefix, file] = process.argv.slice(2);
const { WARCParser } = await import(pathToFileURL(join(prefix, "node_modules/warcio/dist/index.js")).href);

function base32(bytes) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let out = "", bits = 0, value = 0;
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  while (out.length % 8) out += "=";
  return out;
}

const sha1 = (bytes) => "sha1:" + base32(createHash("sha1").update(bytes).digest());

// Every record read raw (the whole block), or with its HTTP head parsed (the payload).
async function readAll(parseHttp) {
  const out = [];
  const parser = new WARCParser(createReadStream(file), { parseHttp, keepHeadersCase: true });
  for await (const record of parser) {
    const bytes = await record.readFully(false);
    out.push({ record, bytes, offset: parser.offset });
  }
  return out;
}

const raw = await readAll(false);
const parsed = await readAll(true);
if (raw.length !== parsed.length) {
  console.error(`read ${raw.length} records raw and ${parsed.length} parsed`);
  process.exit(1);
}
const records = raw.map(({ record, bytes, offset }, i) => {
  const p = parsed[i];
  const fields = [...record.warcHeaders.headers.keys()];
  const block = record.warcBlockDigest;
  const payload = record.warcPayloadDigest;
  const http = p.record.httpHeaders;
  return {
    type: record.warcType,
    id: record.warcHeader("WARC-Record-ID"),
    target: record.warcTargetURI ?? null,
    content_type: record.warcContentType,
    offset,
    fields,
    length: bytes.length,
    block_digest: block ?? null,
    block_ok: block ? block === sha1(bytes) : null,
    payload_digest: payload ?? null,
    payload_ok: payload ? payload === sha1(http ? p.bytes : bytes) : null,
    status_line: http ? http.statusline : null,
    http_fields: http ? [...http.headers.keys()] : null,
    payload_sha1: sha1(http ? p.bytes : bytes),
  };
});
console.log(JSON.stringify({ count: records.length, records }, null, 1));
