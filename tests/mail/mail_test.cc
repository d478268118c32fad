#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../rs/rs_fixture.h"
#include "common/config/config.h"
#include "mail/mailer.h"
#include "mail/notifier.h"
#include "mail/notify_policy.h"
#include "support/wait.h"

namespace lcc::mail {
namespace {

constexpr Millis kDay{24 * 3600 * 1000};

TEST(MailAddress, OnlyPlainAddressesPass) {
  for (const char* ok : {"owner@example.org", "a.b+c@sub.example.org", "x@[127.0.0.1]", "o'neil@example.org"}) {
    EXPECT_TRUE(checkAddress(ok).isOk()) << ok;
  }
  for (const char* bad : {"", "owner", "@example.org", "owner@", "owner@example..org", "a b@example.org",
                          "owner@example.org\r\nBcc: evil@example.org", "owner@example.org\nX: y",
                          "Owner <owner@example.org>", "a@example.org,b@example.org", "a;b@example.org",
                          "\"a\"@example.org", "a..b@example.org", "owner@exa mple.org"}) {
    EXPECT_FALSE(checkAddress(bad).isOk()) << bad;
  }
  EXPECT_NE(checkAddress("owner@example.org\r\nBcc: x@y.z").message().find("CR, LF"), std::string::npos);
}

TEST(MailMessage, HeadersAreOneLineEachAndTheBodyEndsInCrlf) {
  MailMessage m{"owner@example.org", "a subject\r\nBcc: evil@example.org", "line one\nline two\r\n.dot\r"};
  const std::string text = formatMessage(m, "lcc@example.net", fromUnixMillis(1700000000000), "1.2@example.net");
  const auto head_end = text.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos);
  const std::string head = text.substr(0, head_end + 2);
  EXPECT_NE(head.find("Date: Tue, 14 Nov 2023 22:13:20 +0000\r\n"), std::string::npos) << head;
  EXPECT_NE(head.find("From: lcc@example.net\r\n"), std::string::npos);
  EXPECT_NE(head.find("To: owner@example.org\r\n"), std::string::npos);
  EXPECT_NE(head.find("Subject: a subject  Bcc: evil@example.org\r\n"), std::string::npos) << head;
  EXPECT_EQ(head.find("\r\nBcc:"), std::string::npos) << "no header from the subject";
  EXPECT_NE(head.find("Message-ID: <1.2@example.net>\r\n"), std::string::npos);
  EXPECT_NE(head.find("Content-Type: text/plain; charset=utf-8\r\n"), std::string::npos);
  EXPECT_EQ(text.substr(head_end + 4), "line one\r\nline two\r\n.dot\r\n");
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') ASSERT_TRUE(i > 0 && text[i - 1] == '\r') << "bare LF at " << i;
  }
}

ProviderRecord provider(ProviderId id) {
  ProviderRecord p;
  p.id = id;
  p.state = ProviderState::kActive;
  p.contact = "owner" + std::to_string(id) + "@example.org";
  p.prefixes = {"http://site.example/" + std::to_string(id) + "/"};
  p.secret_url = p.prefixes[0] + "lococa-secret.txt";
  return p;
}

std::vector<MailEvent> events(const NotifyDecision& d, ProviderId id) {
  std::vector<MailEvent> out;
  for (const auto& m : d.send) {
    if (m.id == id) out.push_back(m.event);
  }
  return out;
}

TEST(NotifyPolicy, EachEventIsToldOnceAndAtMostOncePerInterval) {
  NotifyPolicy policy({.min_interval = kDay, .quota_warn_percent = 90});
  const WallTime now = fromUnixMillis(1700000000000);
  ProviderRecord suspended = provider(1);
  suspended.state = ProviderState::kSuspended;
  suspended.state_reason = "spam";
  ProviderRecord wanted = provider(2);
  wanted.fullset_wanted = true;
  wanted.fullset_reason = FullSetReason::kCacheCrash;
  ProviderRecord quota = provider(3);
  quota.quota_files = 100;
  quota.used_files = 90;
  ProviderRecord below = provider(4);
  below.quota_bytes = 1000;
  below.used_bytes = 899;
  ProviderRecord missing = provider(5);
  ProviderRecord nobody = provider(6);
  nobody.contact = "not an address";
  nobody.state = ProviderState::kSuspended;
  ProviderRecord pending = provider(7);
  pending.state = ProviderState::kPending;
  pending.fullset_wanted = true;
  pending.fullset_reason = FullSetReason::kCacheCrash;
  ProviderRecord first = provider(8);
  first.fullset_wanted = true;
  first.fullset_reason = FullSetReason::kFirstConnect;
  std::vector<ProviderRecord> all{suspended, wanted, quota, below, missing, nobody, pending, first};
  std::map<ProviderId, SecretMissing> gone{{5, {now - kDay, now + kDay}}};
  NotifyDecision d = policy.decide(all, {}, gone, now);
  EXPECT_EQ(events(d, 1), std::vector<MailEvent>{MailEvent::kSuspended});
  EXPECT_EQ(events(d, 2), std::vector<MailEvent>{MailEvent::kFullSetWanted});
  EXPECT_EQ(events(d, 3), std::vector<MailEvent>{MailEvent::kQuotaNearlyUsed});
  EXPECT_TRUE(events(d, 4).empty()) << "89.9% is below 90%";
  EXPECT_EQ(events(d, 5), std::vector<MailEvent>{MailEvent::kSecretMissing});
  EXPECT_TRUE(events(d, 6).empty()) << "no address";
  EXPECT_TRUE(events(d, 7).empty()) << "pending";
  EXPECT_TRUE(events(d, 8).empty()) << "a first connection's full set is the CP's own business";
  ASSERT_EQ(d.send.size(), 4u);
  const DueMail& s = d.send[0];
  EXPECT_EQ(s.message.to, "owner1@example.org");
  EXPECT_NE(s.message.subject.find("provider 1: suspended"), std::string::npos);
  EXPECT_NE(s.message.body.find("spam"), std::string::npos);
  EXPECT_NE(d.send[3].message.body.find("lococa-secret.txt"), std::string::npos);

  // Told: nothing more while the condition stays, however long.
  std::map<ProviderId, ProviderMails> last;
  for (const auto& m : d.send) last[m.id][m.event] = LastMail{now, true, "", m.key};
  EXPECT_TRUE(policy.decide(all, last, gone, now + 30 * kDay).send.empty());
  // A new reason is told, but not within mail.min_interval of the last mail.
  all[0].state_reason = "another reason";
  EXPECT_TRUE(policy.decide(all, last, gone, now + kDay - Millis(1)).send.empty());
  EXPECT_EQ(events(policy.decide(all, last, gone, now + kDay), 1), std::vector<MailEvent>{MailEvent::kSuspended});
  // A failed mail is tried again after the interval.
  last[3][MailEvent::kQuotaNearlyUsed].sent = false;
  EXPECT_TRUE(events(policy.decide(all, last, gone, now + Millis(1)), 3).empty());
  EXPECT_EQ(events(policy.decide(all, last, gone, now + kDay), 3), std::vector<MailEvent>{MailEvent::kQuotaNearlyUsed});
  // A condition that ends is reported, so its next occurrence is told again.
  all[1].fullset_wanted = false;
  NotifyDecision ended = policy.decide(all, last, gone, now + Millis(1));
  EXPECT_NE(std::find(ended.ended.begin(), ended.ended.end(), std::make_pair(ProviderId{2}, MailEvent::kFullSetWanted)),
            ended.ended.end());
}

// A relay on 127.0.0.1 that accepts connections (the kernel's backlog) and never
// says a word: each attempt waits mail.timeout, then fails.
class SilentRelay {
 public:
  SilentRelay() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 64), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~SilentRelay() { ::close(fd_); }
  std::string url() const { return "smtp://127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

class MailerTest : public rs::testing_rs::RsTest {};

TEST_F(MailerTest, AnUnreachableRelayDelaysNothingAndIsRetriedThenGivenUp) {
  SilentRelay relay;
  Metrics metrics;
  MailerOptions mo = MailerOptions::fromConfig(Config::defaults());
  mo.relay = relay.url();
  mo.from = "lcc@example.net";
  mo.timeout = Millis(300);
  mo.retries = 2;
  mo.retry_delay = Millis(60000);
  mo.queue_size = 4;
  mo.metrics = &metrics;
  auto mailer_ptr = std::make_shared<Mailer>(clock_, mo);
  Mailer& mailer = *mailer_ptr;
  mailer.start();
  NotifierOptions no = NotifierOptions::fromConfig(Config::defaults());
  no.state_path = dir_.file("mail-state.json");
  auto notifier = std::make_shared<Notifier>(*store_, mailer_ptr, clock_, *posixEnv(), no);
  options_.notifier = notifier;
  rs::testing_rs::ScriptedFetcher fetcher;
  auto reg = makeRegistrar(fetcher);
  // Step one answers while the relay holds the mail: it only queues it.
  auto g = reg->registerProvider("http://site.example/", "owner@example.org", "127.0.0.1", nullptr, true);
  ASSERT_TRUE(g.isOk()) << g.status().toString();
  EXPECT_EQ(g.value().mail, "queued");
  EXPECT_EQ(notifier->lastMails(g.value().id)["registration"]["result"], "queued");
  EXPECT_EQ(mailer.held(), 1u);
  // Each failed attempt waits mail.retry_delay on the clock.
  for (int retry = 1; retry <= 2; ++retry) {
    ASSERT_TRUE(testing::waitFor([&] { return metrics.snapshot()["lcc_mail_retries_total"] == retry; }));
    ASSERT_TRUE(testing::waitFor([&] { return clock_.pendingTimers() > 0; }));
    clock_.advance(Millis(60000));
  }
  ASSERT_TRUE(testing::waitFor([&] { return metrics.snapshot()["lcc_mail_failed_total"] == 1; }));
  EXPECT_EQ(metrics.snapshot()["lcc_mail_sent_total"], 0);
  ASSERT_TRUE(testing::waitFor([&] { return mailer.held() == 0; }));
  nlohmann::json last = notifier->lastMails(g.value().id)["registration"];
  EXPECT_EQ(last["result"], "failed");
  EXPECT_NE(last["error"].get<std::string>().find(relay.url()), std::string::npos) << last.dump();
  // Not asked: no mail; an address with CR/LF is refused before anything is made.
  auto quiet = reg->registerProvider("http://other.example/", "owner@example.org", "127.0.0.2");
  ASSERT_TRUE(quiet.isOk());
  EXPECT_EQ(quiet.value().mail, "");
  EXPECT_TRUE(notifier->lastMails(quiet.value().id).empty());
  auto bad = reg->registerProvider("http://third.example/", "a@example.org\r\nBcc: b@example.org", "127.0.0.3", nullptr, true);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("control character"), std::string::npos) << bad.status().message();
  auto named = reg->registerProvider("http://fourth.example/", "Owner <a@example.org>", "127.0.0.4", nullptr, true);
  EXPECT_EQ(named.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(named.status().message().find("e-mail address"), std::string::npos) << named.status().message();
  reg->stop();
  mailer.stop();
}

TEST_F(MailerTest, TheNotifierRemembersWhatItMailedAcrossARestart) {
  SilentRelay relay;
  MailerOptions mo = MailerOptions::fromConfig(Config::defaults());
  mo.relay = relay.url();
  mo.timeout = Millis(300);
  mo.retries = 0;
  mo.queue_size = 4;
  auto mailer_ptr = std::make_shared<Mailer>(clock_, mo);
  Mailer& mailer = *mailer_ptr;
  mailer.start();
  ProviderRecord p = provider(0);
  p.state = ProviderState::kSuspended;
  auto id = store_->create(p);
  ASSERT_TRUE(id.isOk());
  NotifierOptions o = NotifierOptions::fromConfig(Config::defaults());
  o.state_path = dir_.file("mail-state.json");
  o.policy.min_interval = kDay;
  auto first = std::make_shared<Notifier>(*store_, mailer_ptr, clock_, *posixEnv(), o);
  EXPECT_EQ(first->check(), 1u);
  EXPECT_EQ(first->check(), 0u) << "still in flight";
  ASSERT_TRUE(testing::waitFor([&] { return mailer.held() == 0; }));
  EXPECT_EQ(first->lastMails(id.value())["suspended"]["result"], "failed");
  // A new notifier (a restart) reads the file: the failed mail waits mail.min_interval.
  auto second = std::make_shared<Notifier>(*store_, mailer_ptr, clock_, *posixEnv(), o);
  second->load();
  EXPECT_EQ(second->lastMails(id.value())["suspended"]["result"], "failed");
  EXPECT_EQ(second->check(), 0u);
  clock_.advance(kDay);
  EXPECT_EQ(second->check(), 1u);
  mailer.stop();
}

}  // namespace
}  // namespace lcc::mail
