// server_connection_respond.h — the answering half of Connection (server_connection.h):
// whole bodies, and streamed bodies through a StreamSink on the stream_workers pool,
// each write bounded by http.write_timeout. Internal to core/http.
#pragma once

namespace lcc::http {

template <class Stream>
void Connection<Stream>::respond(Response res, bool keep_alive, bool head, bool http10) {
  namespace bhttp = boost::beast::http;
  if (closed) return;
  if (res.stream && !head) {
    AddressSlots::Slot stream_slot =
        shared->slots->tryAcquire(remote_ip, AddressSlots::kStream, shared->options.max_streams_per_ip);
    if (stream_slot) return respondStream(std::move(res), keep_alive, http10, std::move(stream_slot));
    if (shared->busy) shared->busy->inc();
    res = busyResponse("streamed answers");
  }
  shared->countStatus(res.status);
  auto m = std::make_shared<bhttp::response<bhttp::string_body>>(static_cast<bhttp::status>(res.status), 11);
  setCommon(*m, res, keep_alive);
  if (res.stream) {  // HEAD of a streamed resource: headers only
    if (res.stream_length) {
      m->content_length(*res.stream_length);
    } else if (!http10) {
      m->chunked(true);
    }
    m->body().clear();
  } else {
    m->body() = std::move(res.body);
    m->prepare_payload();
    if (head) m->body().clear();  // Content-Length stays that of the GET
  }
  lowest().expires_after(writeTimeout());
  if (head && res.stream) {
    auto sr = std::make_shared<bhttp::response_serializer<bhttp::string_body>>(*m);
    bhttp::async_write_header(stream, *sr, [self = shared_from_this(), m, sr](error_code ec, std::size_t) {
      self->afterResponse(ec, m->keep_alive());
    });
    return;
  }
  bhttp::async_write(stream, *m, [self = shared_from_this(), m](error_code ec, std::size_t) {
    self->afterResponse(ec, m->keep_alive());
  });
}

template <class Stream>
void Connection<Stream>::respondStream(Response res, bool keep_alive, bool http10, AddressSlots::Slot stream_slot) {
  namespace bhttp = boost::beast::http;
  shared->countStatus(res.status);
  auto m = std::make_shared<bhttp::response<bhttp::empty_body>>(static_cast<bhttp::status>(res.status), 11);
  setCommon(*m, res, keep_alive);
  // A known length goes as Content-Length; otherwise chunked, and HTTP/1.0 (no chunked
  // encoding) gets the body until the connection closes.
  const bool chunked = !res.stream_length && !http10;
  if (res.stream_length) {
    m->content_length(*res.stream_length);
  } else if (http10) {
    m->keep_alive(false);
  } else {
    m->chunked(true);
  }
  auto sr = std::make_shared<bhttp::response_serializer<bhttp::empty_body>>(*m);
  std::weak_ptr<Connection> weak = weak_from_this();  // the injected class name: Connection<Stream>
  auto executor = stream.get_executor();
  sink = std::make_shared<StreamSink>(shared->options.stream_buffer, chunked, res.stream_length, [weak, executor] {
    boost::asio::post(executor, [weak] {
      if (auto c = weak.lock()) c->pump();
    });
  });
  shared->registerSink(sink);
  lowest().expires_after(writeTimeout());
  bhttp::async_write_header(stream, *sr,
                            [self = shared_from_this(), m, sr, fn = std::move(res.stream),
                             keep_alive = m->keep_alive(), stream_slot = std::move(stream_slot)](
                                error_code ec, std::size_t) mutable {
                              if (ec) return self->close();
                              self->runStream(std::move(fn), keep_alive, std::move(stream_slot));
                            });
}

// The stream function on a stream worker; its address's stream slot is held until it
// returns and its bytes are out (or the connection is cut).
template <class Stream>
void Connection<Stream>::runStream(std::function<Status(ByteSink&)> fn, bool keep_alive,
                                   AddressSlots::Slot stream_slot) {
  auto sk = sink;
  boost::asio::post(shared->stream_workers, [self = shared_from_this(), sk, fn = std::move(fn), keep_alive,
                                             stream_slot = std::move(stream_slot)]() mutable {
    Status st;
    try {
      st = fn(*sk);
    } catch (const std::exception& e) {
      st = Status::internal(std::string("stream threw: ") + e.what());
    } catch (...) {
      st = Status::internal("stream threw");
    }
    if (!st.isOk() && !sk->failed()) {
      spdlog::warn("http: streamed body for {} ended early: {}", self->remote_ip, st.toString());
    }
    bool clean = st.isOk() && sk->finish().isOk();
    stream_slot.reset();
    if (!clean && self->shared->streams_cut) self->shared->streams_cut->inc();
    boost::asio::post(self->stream.get_executor(), [self, clean, keep_alive] {
      self->sink.reset();
      // An unfinished body (chunked, or short of its length) can only be ended by
      // closing the connection.
      self->afterResponse(clean ? error_code() : error_code(boost::asio::error::broken_pipe), keep_alive);
    });
  });
}

template <class Stream>
void Connection<Stream>::pump() {
  if (!sink || closed) return;
  auto next = sink->takeNext();
  if (!next) return;
  writeSome(std::make_shared<std::string>(std::move(*next)), 0);
}

// Writes `buf` from `offset`; each write must move bytes within the write timeout, so a
// client that stops reading frees its stream worker after http.write_timeout.
template <class Stream>
void Connection<Stream>::writeSome(std::shared_ptr<std::string> buf, std::size_t offset) {
  lowest().expires_after(writeTimeout());
  stream.async_write_some(boost::asio::buffer(*buf) + offset,
                          [self = shared_from_this(), buf, offset](error_code ec, std::size_t n) {
                            if (!self->sink) return;
                            if (ec) {
                              self->sink->fail();
                              self->close();
                              return;
                            }
                            if (offset + n < buf->size()) return self->writeSome(buf, offset + n);
                            self->sink->written(buf->size());
                            self->pump();
                          });
}

}  // namespace lcc::http
