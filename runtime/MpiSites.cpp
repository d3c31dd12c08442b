// This file implements MpiSites (see MpiSites.h): queries and answers about
// where processes on other nodes wait, on a duplicate of MPI_COMM_WORLD.
#ifdef DT_HAVE_MPI

#include "runtime/MpiSites.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace dt {

namespace {
constexpr int kQuery = 1, kAnswer = 2;
} // namespace

MpiSites::MpiSites(MPI_Comm world) {
  MPI_Comm_dup(world, &comm_);
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
}

MpiSites::~MpiSites() {
  std::lock_guard<std::mutex> lk(mu_);
  // Answers still in flight go to a process that no longer listens: cancel them.
  for (auto &s : sends_) {
    int done = 0;
    MPI_Test(&s.second, &done, MPI_STATUS_IGNORE);
    if (!done) {
      MPI_Cancel(&s.second);
      MPI_Request_free(&s.second);
    }
  }
  sends_.clear();
  if (comm_ != MPI_COMM_NULL)
    MPI_Comm_free(&comm_);
}

void MpiSites::serve(const FaultWatch &w) {
  std::unique_lock<std::mutex> lk(mu_, std::try_to_lock);
  if (lk.owns_lock())
    serveLocked(w);
}

void MpiSites::serveLocked(const FaultWatch &w) {
  for (;;) {
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    if (MPI_Improbe(MPI_ANY_SOURCE, kQuery, comm_, &flag, &msg, &st) != MPI_SUCCESS || !flag)
      break;
    int asker = -1;
    MPI_Mrecv(&asker, 1, MPI_INT, &msg, MPI_STATUS_IGNORE);
    sends_.emplace_back(w.where(), MPI_REQUEST_NULL);
    std::pair<std::string, MPI_Request> &a = sends_.back();
    MPI_Isend(a.first.c_str(), (int)a.first.size() + 1, MPI_CHAR, st.MPI_SOURCE, kAnswer, comm_,
              &a.second);
  }
  for (auto it = sends_.begin(); it != sends_.end();) {
    int done = 0;
    MPI_Test(&it->second, &done, MPI_STATUS_IGNORE);
    it = done ? sends_.erase(it) : std::next(it);
  }
}

std::map<int, std::string> MpiSites::ask(const FaultWatch &w, double windowSeconds,
                                         std::vector<int> *silent) {
  std::lock_guard<std::mutex> lk(mu_);
  const std::vector<PeerProcess> &peers = w.peers();
  std::vector<MPI_Request> queries;
  std::map<int, std::string> answers;
  std::vector<bool> waiting(peers.size(), false);
  size_t pending = 0;
  for (int r = 0; r < (int)peers.size(); ++r) {
    if (r == rank_ || peers[r].sameNode)
      continue;
    queries.push_back(MPI_REQUEST_NULL);
    if (MPI_Isend(&rank_, 1, MPI_INT, r, kQuery, comm_, &queries.back()) != MPI_SUCCESS)
      continue;
    waiting[r] = true;
    ++pending;
  }
  using Clock = std::chrono::steady_clock;
  const Clock::time_point end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                   std::chrono::duration<double>(windowSeconds));
  while (pending && Clock::now() < end) {
    serveLocked(w); // a peer may be asking this process at the same time
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    if (MPI_Improbe(MPI_ANY_SOURCE, kAnswer, comm_, &flag, &msg, &st) != MPI_SUCCESS || !flag) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    int len = 0;
    MPI_Get_count(&st, MPI_CHAR, &len);
    std::string text((size_t)std::max(len, 0), '\0');
    MPI_Mrecv(text.data(), len, MPI_CHAR, &msg, MPI_STATUS_IGNORE);
    text.resize(text.find('\0') == std::string::npos ? text.size() : text.find('\0'));
    const int from = st.MPI_SOURCE;
    if (from >= 0 && from < (int)waiting.size() && waiting[from]) {
      waiting[from] = false;
      --pending;
      answers[from] = text;
    }
  }
  // Queries to a process that never listened stay unmatched: let MPI drop them.
  for (MPI_Request &q : queries) {
    int done = 0;
    MPI_Test(&q, &done, MPI_STATUS_IGNORE);
    if (!done && q != MPI_REQUEST_NULL)
      MPI_Request_free(&q);
  }
  if (silent)
    for (int r = 0; r < (int)waiting.size(); ++r)
      if (waiting[r])
        silent->push_back(r);
  return answers;
}

/// Asks the processes on other nodes where they wait (MpiSites.h) and adds
/// those waiting elsewhere than this one to `sites` (the site table's list);
/// `silent` gets those that did not answer. False when there was nobody to
/// ask.
bool MpiSites::describe(const FaultWatch &w, std::vector<int> *silent, std::string *sites,
                        bool *differ) {
  bool any = false;
  for (int r = 0; r < (int)w.peers().size(); ++r)
    any |= r != w.rank() && !w.peers()[r].sameNode;
  if (!any)
    return false;
  // Peers answer within 100 ms of their polling; leave room for a loaded machine.
  const double window = std::clamp(w.timeout() / 4, 1.0, 5.0);
  std::map<int, std::string> answers = ask(w, window, silent);
  const std::string mine = w.where();
  int listed = 0;
  for (const auto &[r, site] : answers) {
    if (site == mine)
      continue;
    *differ = true;
    if (++listed > 4)
      continue;
    *sites += (sites->empty() ? "" : ", ") + w.processName(r) + " waits " + site;
  }
  if (listed > 4)
    *sites += " and " + std::to_string(listed - 4) + " more on other nodes";
  return true;
}

/// "rank 3 (pid 4711 on host b) does not answer (...)", for the processes on
/// other nodes that did not answer a question (at most 4 named).
std::string MpiSites::silentPeers(const FaultWatch &w, const std::vector<int> &silent) {
  std::string out;
  for (size_t i = 0; i < silent.size() && i < 4; ++i) {
    const PeerProcess &p = w.peers()[silent[i]];
    out += (i ? ", " : "") + w.processName(silent[i]) + " (pid " + std::to_string(p.pid) +
           " on host " + p.host + ")";
  }
  if (silent.size() > 4)
    out += " and " + std::to_string(silent.size() - 4) + " more";
  return out + (silent.size() == 1 ? " does" : " do") +
         " not answer (stopped, or computing outside any collective for longer than "
         "--fault-timeout)";
}

} // namespace dt

#endif // DT_HAVE_MPI
