// server_options.cc — the QM's two ports' options from the config: the one place that
// maps listen.botm, listen.qm, uns.max_attribute_length and node.link_frames to their members.
#include <limits>

#include "common/config/config.h"
#include "qm/botm_server.h"
#include "qm/intake_server.h"

namespace lcc::qm {

BotmServerOptions BotmServerOptions::fromConfig(const Config& cfg) {
  BotmServerOptions o;
  o.listen = cfg.getString("listen.botm");
  o.max_attribute_length = static_cast<std::size_t>(cfg.getInt("uns.max_attribute_length"));
  o.frames = cfg.getBool("node.link_frames");
  return o;
}

IntakeServerOptions IntakeServerOptions::fromConfig(const Config& cfg) {
  IntakeServerOptions o;
  o.listen = cfg.getString("listen.qm");
  o.max_attribute_length = static_cast<std::size_t>(cfg.getInt("uns.max_attribute_length"));
  o.max_set_urls = std::numeric_limits<std::uint64_t>::max();  // the UNS caps sets (intake_server.h)
  o.frames = cfg.getBool("node.link_frames");
  return o;
}

}  // namespace lcc::qm
