#include "common/mime_map.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "lcc/support/url_norm.h"

namespace lcc {

MimeMap::MimeMap() {
  by_ext_ = {
      {"htm", "text/html"},          {"html", "text/html"},         {"shtml", "text/html"},
      {"txt", "text/plain"},         {"text", "text/plain"},        {"css", "text/css"},
      {"csv", "text/csv"},           {"md", "text/markdown"},       {"xml", "application/xml"},
      {"xhtml", "application/xhtml+xml"}, {"json", "application/json"}, {"js", "text/javascript"},
      {"pdf", "application/pdf"},    {"ps", "application/postscript"}, {"rtf", "application/rtf"},
      {"doc", "application/msword"}, {"docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
      {"xls", "application/vnd.ms-excel"}, {"odt", "application/vnd.oasis.opendocument.text"},
      {"zip", "application/zip"},    {"gz", "application/gzip"},    {"tar", "application/x-tar"},
      {"png", "image/png"},          {"jpg", "image/jpeg"},         {"jpeg", "image/jpeg"},
      {"gif", "image/gif"},          {"svg", "image/svg+xml"},      {"webp", "image/webp"},
      {"ico", "image/vnd.microsoft.icon"}, {"mp3", "audio/mpeg"}, {"mp4", "video/mp4"},
  };
}

bool MimeMap::load(const std::string& path, std::string* err) {
  std::ifstream in(path);
  if (!in) {
    *err = "cannot read " + path;
    return false;
  }
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream ss(line);
    std::string type, ext;
    if (!(ss >> type)) continue;
    if (type.find('/') == std::string::npos) {
      *err = path + ":" + std::to_string(n) + ": expected 'type/subtype ext ...'";
      return false;
    }
    while (ss >> ext) {
      if (!ext.empty() && ext[0] == '.') ext.erase(0, 1);
      std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
      by_ext_[ext] = type;
    }
  }
  return true;
}

std::string MimeMap::forExtension(std::string ext) const {
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  auto it = by_ext_.find(ext);
  return it == by_ext_.end() ? "application/octet-stream" : it->second;
}

std::string MimeMap::forUrlPath(std::string_view path) const {
  const std::string_view last = path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1);
  const auto dot = last.rfind('.');
  if (last.empty() || dot == std::string_view::npos || dot == 0 || dot + 1 == last.size()) return "text/html";
  return forExtension(std::string(last.substr(dot + 1)));
}

std::string MimeMap::forUrl(std::string_view normal_url) const {
  auto parts = url::splitNormalUrl(normal_url);
  return forUrlPath(parts.isOk() ? std::string_view(parts.value().path) : std::string_view("/"));
}

}  // namespace lcc
