// This file implements FaultWatch (see FaultWatch.h): peer inspection through
// /proc, the report line, and the signal handlers.
#include "runtime/FaultWatch.h"

#include "runtime/Backend.h"
#include "support/Diagnostics.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

namespace dt {

namespace {

// The process's watch, for the signal handlers (see FaultWatch.h: signals
// are process-wide).
std::atomic<FaultWatch *> gWatch{nullptr};

enum class PeerState { Running, Stopped, Gone };

/// The state of process `pid` on this node, from kill(2) and /proc/PID/stat
/// (async-signal-safe).
PeerState peerState(int pid) {
  if (pid <= 0)
    return PeerState::Running;
  if (kill(pid, 0) != 0 && errno == ESRCH)
    return PeerState::Gone;
  FaultWatch::Line path;
  path.put("/proc/");
  path.put((long long)pid);
  path.put("/stat");
  int fd = open(path.buf, O_RDONLY);
  if (fd < 0)
    return PeerState::Gone;
  char buf[512];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0)
    return PeerState::Gone;
  buf[n] = 0;
  // "pid (comm) S ...": the state follows the last ')' (comm may hold one).
  const char *p = nullptr;
  for (ssize_t i = 0; i < n; ++i)
    if (buf[i] == ')')
      p = buf + i;
  if (!p || p[1] != ' ')
    return PeerState::Running;
  switch (p[2]) {
  case 'Z':
  case 'X':
    return PeerState::Gone;
  case 'T':
  case 't':
    return PeerState::Stopped;
  default:
    return PeerState::Running;
  }
}

const char *signalName(int sig) {
  switch (sig) {
  case SIGSEGV:
    return "SIGSEGV";
  case SIGBUS:
    return "SIGBUS";
  case SIGFPE:
    return "SIGFPE";
  case SIGILL:
    return "SIGILL";
  case SIGABRT:
    return "SIGABRT";
  case SIGTERM:
    return "SIGTERM";
  }
  return "a signal";
}

void writeAll(const FaultWatch::Line &l) {
  size_t off = 0;
  while (off < l.n) {
    ssize_t w = write(2, l.buf + off, l.n - off);
    if (w <= 0)
      return;
    off += (size_t)w;
  }
}

const int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// How long past the timeout the watchdog lets a polled wait report itself
/// (its report may ask other nodes for up to 5 s, MpiSites.cpp).
constexpr double kPolledGrace = 10;

} // namespace

void FaultWatch::Line::put(const char *s) {
  while (s && *s && n + 1 < sizeof(buf))
    buf[n++] = *s++;
  buf[n] = 0;
}

void FaultWatch::Line::put(long long v) {
  char tmp[24];
  int k = 0;
  unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
  do
    tmp[k++] = (char)('0' + u % 10);
  while ((u /= 10) && k < 23);
  if (v < 0)
    tmp[k++] = '-';
  while (k && n + 1 < sizeof(buf))
    buf[n++] = tmp[--k];
  buf[n] = 0;
}

FaultWatch::FaultWatch(int rank, double timeoutSeconds) : rank_(rank), timeout_(timeoutSeconds) {
  FaultWatch *none = nullptr;
  gWatch.compare_exchange_strong(none, this);
}

FaultWatch::~FaultWatch() {
  if (watchdog_.joinable()) {
    {
      std::lock_guard<std::mutex> lk(dogMu_);
      dogStop_ = true;
    }
    dogWake_.notify_all();
    watchdog_.join();
  }
  FaultWatch *me = this;
  if (gWatch.compare_exchange_strong(me, nullptr)) {
    for (int sig : kCrashSignals)
      std::signal(sig, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
  }
}

FaultWatch *FaultWatch::current() { return gWatch.load(); }

void FaultWatch::putProcess(Line &l, int p) const {
  if (p < 0) { // before MPI_Init, without a launcher's rank
    l.put("this process");
    return;
  }
  if (perProcess_ == 1) {
    l.put("rank ");
    l.put((long long)p);
    return;
  }
  l.put("process ");
  l.put((long long)p);
  l.put(" (ranks ");
  l.put((long long)p * perProcess_);
  l.put("-");
  l.put((long long)p * perProcess_ + perProcess_ - 1);
  l.put(")");
}

std::string FaultWatch::processName(int p) const {
  Line l;
  putProcess(l, p);
  return std::string(l.buf, l.n);
}

const char *const FaultWatch::kEndOfRun = "the end-of-run barrier";
const char *const FaultWatch::kStartUp = "the start-up exchange";
const char *const FaultWatch::kInit = "MPI_Init";

void FaultWatch::putWhere(Line &l) const {
  const char *coll = collective_.load(std::memory_order_relaxed);
  if (coll == kEndOfRun) {
    l.put("at the end of its program (waiting for the other processes to end theirs)");
    return;
  }
  if (coll == kStartUp) {
    l.put("at start-up (exchanging pids and hosts with the other processes)");
    return;
  }
  if (coll == kInit) {
    l.put("in MPI_Init");
    return;
  }
  const Device *dev = device_.load();
  const Inst *in = dev ? dev->site() : nullptr;
  if (coll) {
    l.put("in ");
    l.put(coll);
    l.put(in ? " for `" : " gathering the results");
  } else {
    l.put(in ? "after `" : "outside a collective");
  }
  if (!in)
    return;
  l.put(opName(in->op));
  l.put("`");
  if (in->loc.known()) {
    l.put(" at ");
    if (sources_ && in->loc.file >= 0 && in->loc.file < sources_->count())
      l.put(sources_->path(in->loc.file).c_str());
    else
      l.put("<program>");
    l.put(":");
    l.put((long long)in->loc.line);
    l.put(":");
    l.put((long long)in->loc.col);
  }
}

bool FaultWatch::putFailedPeers(Line &l) const {
  int named = 0;
  for (size_t r = 0; r < peers_.size(); ++r) {
    if ((int)r == rank_ || !peers_[r].sameNode)
      continue;
    PeerState s = peerState(peers_[r].pid);
    if (s == PeerState::Running)
      continue;
    if (named == 4) {
      l.put(" and more");
      break;
    }
    l.put(named++ ? ", " : "");
    putProcess(l, (int)r);
    l.put(" (pid ");
    l.put((long long)peers_[r].pid);
    l.put(s == PeerState::Gone ? ") exited" : ") is stopped");
  }
  return named > 0;
}

bool FaultWatch::putFailedPeer(Line &l, const int *members, size_t count, bool stoppedToo) const {
  size_t total = members ? count : peers_.size();
  for (size_t i = 0; i < total; ++i) {
    int r = members ? members[i] : (int)i;
    if (r == rank_ || r < 0 || (size_t)r >= peers_.size() || !peers_[r].sameNode)
      continue;
    PeerState s = peerState(peers_[r].pid);
    if (s == PeerState::Running || (s == PeerState::Stopped && !stoppedToo))
      continue;
    putProcess(l, r);
    l.put(" (pid ");
    l.put((long long)peers_[r].pid);
    l.put(s == PeerState::Gone ? ") exited" : ") is stopped");
    return true;
  }
  return false;
}

std::string FaultWatch::failedPeer(const std::vector<int> *members, bool stoppedToo) const {
  Line l;
  if (!putFailedPeer(l, members ? members->data() : nullptr, members ? members->size() : 0,
                     stoppedToo))
    return "";
  return std::string(l.buf, l.n);
}

void FaultWatch::enter(const char *collective) {
  collective_.store(collective, std::memory_order_relaxed);
  int64_t none = 0;
  if (waitSince_.compare_exchange_strong(none, nowNs()))
    polled_.store(true);
  if (!sites_ || rank_ < 0 || (size_t)rank_ >= siteCount_)
    return;
  Line l;
  putWhere(l);
  std::lock_guard<std::mutex> lk(publishMu_);
  SiteSlot &s = sites_[rank_];
  s.seq.fetch_add(1, std::memory_order_acq_rel); // odd: being written
  std::memcpy(s.text, l.buf, std::min(l.n + 1, sizeof(s.text) - 1));
  s.text[sizeof(s.text) - 1] = 0;
  s.seq.fetch_add(1, std::memory_order_release);
}

void FaultWatch::block(const char *what) {
  enter(what);
  polled_.store(false);
}

void FaultWatch::leave() {
  collective_.store(nullptr, std::memory_order_relaxed);
  waitSince_.store(0);
  if (!sites_ || rank_ < 0 || (size_t)rank_ >= siteCount_)
    return;
  std::lock_guard<std::mutex> lk(publishMu_);
  SiteSlot &s = sites_[rank_];
  s.seq.fetch_add(1, std::memory_order_acq_rel);
  s.text[0] = 0;
  s.seq.fetch_add(1, std::memory_order_release);
}

std::string FaultWatch::peerSites(const std::vector<int> *members, bool *differ) const {
  if (differ)
    *differ = false;
  if (!sites_)
    return "";
  auto read = [&](int r) {
    const SiteSlot &s = sites_[r];
    char text[sizeof(s.text)];
    for (int tries = 0; tries < 100; ++tries) {
      uint32_t a = s.seq.load(std::memory_order_acquire);
      if (a & 1)
        continue;
      std::memcpy(text, s.text, sizeof(text));
      std::atomic_thread_fence(std::memory_order_acquire);
      if (s.seq.load(std::memory_order_relaxed) == a) {
        text[sizeof(text) - 1] = 0;
        return std::string(text);
      }
    }
    return std::string("(changing)");
  };
  const std::string mine = (size_t)rank_ < siteCount_ ? read(rank_) : "";
  std::string out;
  int listed = 0, more = 0;
  size_t total = members ? members->size() : peers_.size();
  for (size_t i = 0; i < total; ++i) {
    int r = members ? (*members)[i] : (int)i;
    if (r == rank_ || r < 0 || (size_t)r >= peers_.size() || (size_t)r >= siteCount_ ||
        !peers_[r].sameNode)
      continue;
    std::string site = read(r);
    bool elsewhere = site != mine;
    if (differ && elsewhere)
      *differ = true;
    if (!elsewhere)
      continue; // waits where this rank waits: nothing to tell
    if (listed == 4) {
      ++more;
      continue;
    }
    out += (out.empty() ? "" : ", ") + processName(r) +
           (site.empty() ? " is outside any collective (computing, or stuck)" : " waits " + site);
    ++listed;
  }
  if (more)
    out += " and " + std::to_string(more) + " more";
  return out;
}

std::string FaultWatch::where() const {
  Line l;
  putWhere(l);
  return std::string(l.buf, l.n);
}

bool FaultWatch::report(const std::string &what) {
  if (failing_.exchange(true))
    return false;
  if (!claimReport())
    return true; // another process of this node reported: end without a line
  Line l;
  l.put("dtensorc: ");
  putProcess(l, rank_);
  l.put(": ");
  l.put(what.c_str());
  l.put("\n");
  writeAll(l);
  return true;
}

void FaultWatch::fail(const std::string &what) {
  report(what);
  if (abort_)
    abort_(1);
  _exit(1);
}

void FaultWatch::startWatchdog(bool abortFromAnyThread) {
  if (watchdog_.joinable())
    return;
  abortFromAnyThread_ = abortFromAnyThread;
  watchdog_ = std::thread([this] { watchdogLoop(); });
}

void FaultWatch::watchdogLoop() {
  std::unique_lock<std::mutex> lk(dogMu_);
  // Time this process spent stopped (SIGSTOP, then the launcher's SIGCONT
  // as it ends the job) is not time a peer kept it waiting: a tick that
  // comes a second late leaves its gap out of the wait (a stopped rank,
  // resumed, must not report its peers before the job's end reaches it).
  // A wait that began just before the stop, so that this late tick is the
  // first to see it, keeps the part of the gap after it began.
  const int64_t tickNs = 100'000'000;
  int64_t lastTick = nowNs(), lastSince = 0, pausedNs = 0;
  while (!dogWake_.wait_for(lk, std::chrono::nanoseconds(tickNs), [&] { return dogStop_; })) {
    const int64_t since = waitSince_.load(), now = nowNs();
    const bool late = now - lastTick > 10 * tickNs;
    const int64_t due = lastTick + tickNs; // when this tick should have come
    lastTick = now;
    if (since != lastSince) {
      lastSince = since;
      pausedNs = 0;
    }
    if (late && since)
      pausedNs += now - std::max(due, since);
    if (!since)
      continue;
    const double waited = (double)(now - since - pausedNs) / 1e9;
    const bool polled = polled_.load();
    const std::string me = processName(rank_);
    std::string what;
    if (!polled && waited >= 0.1) {
      std::string peer = failedPeer(nullptr, false);
      if (!peer.empty())
        what = peer + " while " + me + " waited " + where();
    }
    const double limit = timeout_ + (polled ? kPolledGrace : 0);
    if (what.empty() && waited >= limit) {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%g", limit);
      const std::string waitedLine = me + " waited " + secs + " s " + where();
      std::string peer = failedPeer(nullptr, true);
      bool differ = false;
      std::string sites = peer.empty() ? peerSites(nullptr, &differ) : "";
      if (!peer.empty())
        what = peer + ": " + waitedLine;
      else if (collective_.load() == kInit)
        what = "no answer: " + waitedLine +
               " (it waits for every process of the job to start: one is stopped, or did not "
               "start)";
      else if (differ)
        what = "no answer: " + waitedLine +
               "; the ranks wait in different places (a deadlock, or a rank computing longer "
               "than --fault-timeout): " +
               sites;
      else
        what = "no answer: " + waitedLine + " (every process on this node is alive" +
               (hasSiteTable() ? " and waits there too" : "") +
               ": a deadlock, a rank on another node that stopped, or one computing longer "
               "than --fault-timeout)";
    }
    if (what.empty() || since != waitSince_.load())
      continue; // nothing to report, or the wait ended meanwhile
    if (!report(what))
      return; // another thread reports and ends the job
    if (abortFromAnyThread_ && abort_)
      abort_(1);
    _exit(1);
  }
}

void faultSignal(int sig) {
  FaultWatch *w = gWatch.load();
  int saved = errno;
  // A launcher's stop is said only when no process of this node reported
  // the fault already; a crash always says what it was.
  if (w && !w->failing_.exchange(true) && (sig != SIGTERM || w->claimReport())) {
    FaultWatch::Line l;
    l.put("dtensorc: ");
    w->putProcess(l, w->rank_);
    if (sig == SIGTERM) {
      l.put(": stopped by the launcher ");
      w->putWhere(l);
      l.put(": ");
      if (!w->putFailedPeers(l))
        l.put("another process of the job failed (the launcher's message names it)");
    } else {
      l.put(": crashed (");
      l.put(signalName(sig));
      l.put(") ");
      w->putWhere(l);
    }
    l.put("\n");
    writeAll(l);
  }
  errno = saved;
  if (sig == SIGTERM)
    _exit(1);
  // Die of the signal, so that the launcher reports it too.
  std::signal(sig, SIG_DFL);
  raise(sig);
}

void FaultWatch::installSignalHandlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = &faultSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;
  for (int sig : kCrashSignals)
    sigaction(sig, &sa, nullptr);
  sa.sa_flags = 0;
  sigaction(SIGTERM, &sa, nullptr);
}

} // namespace dt
