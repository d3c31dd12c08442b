// This file implements load_file / save_file blocks (see TensorIO.h).
#include "runtime/TensorIO.h"

#include "support/Errors.h"
#include "support/TensorFile.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace dt {

namespace {

/// The fault of a save whose temporary file `temp` failed: its message names
/// the user's file `target`, not the temporary.
RuntimeFault saveFault(const TensorFileError &err, const std::string &temp,
                       const std::string &target, const std::string &suffix = "") {
  std::string what = err.what();
  if (what.rfind(temp, 0) == 0)
    what = target + what.substr(temp.size());
  return RuntimeFault(std::string("save: ") + what + suffix);
}

TensorFileEntry entryFor(const TensorType &t, const std::string &path, const std::string &name) {
  TensorFileEntry e;
  try {
    e = readTensorFileEntry(path, name);
  } catch (const TensorFileError &err) {
    throw RuntimeFault(std::string("load: ") + err.what());
  }
  if (e.dtype != dtypeName(t.dtype) || e.shape != concreteDims(t.shape)) {
    std::string dims;
    for (size_t i = 0; i < e.shape.size(); ++i)
      dims += (i ? ", " : "") + std::to_string(e.shape[i]);
    throw RuntimeFault("load: " + path + (name.empty() ? "" : " `" + name + "`") + " now holds " +
                       e.dtype + "[" + dims + "], not the `" + t.str() +
                       "` it held when the program was compiled");
  }
  return e;
}

} // namespace

FileOperand parseFileOperand(const std::string &str) {
  FileOperand f;
  size_t nl = str.find('\n');
  f.path = str.substr(0, nl);
  while (nl != std::string::npos) {
    size_t next = str.find('\n', nl + 1);
    f.names.push_back(
        str.substr(nl + 1, next == std::string::npos ? std::string::npos : next - nl - 1));
    nl = next;
  }
  return f;
}

HostTensor loadFileBlock(const Inst &in, const TensorType &t, const std::vector<int64_t> &offset,
                         const std::vector<int64_t> &shape) {
  FileOperand f = parseFileOperand(in.attrs.str);
  TensorFileEntry e = entryFor(t, f.path, f.names.empty() ? "" : f.names[0]);
  HostTensor r(t.dtype, shape);
  try {
    readTensorBlock(f.path, e, offset, shape, r.raw());
  } catch (const TensorFileError &err) {
    throw RuntimeFault(std::string("load: ") + err.what());
  }
  return r;
}

std::string saveTarget(const std::string &path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_symlink(fs::symlink_status(path, ec)))
    return path;
  fs::path target = fs::weakly_canonical(path, ec);
  return ec ? path : target.string();
}

std::string saveTempPath(const std::string &path0, uint64_t nonce) {
  const std::string path = saveTarget(path0); // the temp file beside what it replaces
  char hex[20];
  std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)nonce);
  // The extension stays last: it says the file's format (.npy, .safetensors).
  size_t slash = path.rfind('/');
  size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
    return path + ".dtensor-tmp-" + hex;
  return path.substr(0, dot) + ".dtensor-tmp-" + hex + path.substr(dot);
}

uint64_t saveNonce() {
  static std::atomic<uint64_t> counter{0};
  uint64_t t = (uint64_t)std::chrono::steady_clock::now().time_since_epoch().count();
  return ((uint64_t)getpid() << 40) ^ (t & 0xffffffffffull) ^ (++counter << 20);
}

void commitSave(const std::string &temp, const std::string &path0) {
  const std::string path = saveTarget(path0);
  int fd = ::open(temp.c_str(), O_RDWR);
  bool synced = fd >= 0 && ::fsync(fd) == 0;
  if (fd >= 0)
    ::close(fd);
  if (!synced || std::rename(temp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    abandonSave(temp);
    throw RuntimeFault("save: " + path + ": cannot replace it with the new file (" + why +
                       "); the old file is unchanged");
  }
}

void abandonSave(const std::string &temp) { std::remove(temp.c_str()); }

void removeStaleSaves(const std::string &path) {
  namespace fs = std::filesystem;
  const std::string probe = saveTempPath(path, 0); // the pattern, nonce 0
  const std::string name = fs::path(probe).filename().string();
  const size_t at = name.rfind(".dtensor-tmp-");
  if (at == std::string::npos)
    return;
  const std::string head = name.substr(0, at + 13), tail = name.substr(at + 13 + 16);
  std::error_code ec;
  fs::path dir = fs::path(probe).parent_path();
  fs::directory_iterator it(dir.empty() ? fs::path(".") : dir, ec), end;
  const auto now = fs::file_time_type::clock::now();
  for (int seen = 0; !ec && it != end && seen < 100000; it.increment(ec), ++seen) {
    const std::string n = it->path().filename().string();
    if (n.size() != head.size() + 16 + tail.size() || n.compare(0, head.size(), head) != 0 ||
        n.compare(n.size() - tail.size(), tail.size(), tail) != 0)
      continue;
    const std::string hex = n.substr(head.size(), 16);
    if (hex.find_first_not_of("0123456789abcdef") != std::string::npos)
      continue;
    const long pid = (long)(std::strtoull(hex.c_str(), nullptr, 16) >> 40);
    std::error_code fe;
    if (!fs::is_regular_file(fs::symlink_status(it->path(), fe)) ||
        (pid > 0 && (::kill((pid_t)pid, 0) == 0 || errno == EPERM)))
      continue; // its run is alive here
    auto age = now - fs::last_write_time(it->path(), fe);
    if (!fe && age > std::chrono::minutes(10)) // a save running elsewhere writes to it
      fs::remove(it->path(), fe);
  }
}

void createSaveFile(const Inst &in, const std::vector<TensorType> &types, const std::string &temp) {
  FileOperand f = parseFileOperand(in.attrs.str);
  // Only a regular file is replaced (a rename over a device, a FIFO or a
  // folder would replace the device itself).
  struct stat st;
  if (::stat(f.path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw RuntimeFault(std::string("save: ") + f.path + ": not a regular file");
  removeStaleSaves(f.path);
  try {
    if (isSafetensorsPath(f.path)) {
      std::vector<std::pair<std::string, TensorFileEntry>> ts;
      for (size_t k = 0; k < types.size(); ++k) {
        TensorFileEntry e;
        e.dtype = dtypeName(types[k].dtype);
        e.shape = concreteDims(types[k].shape);
        ts.push_back({f.names.at(k), e});
      }
      createSafetensorsFile(temp, ts);
    } else {
      createNpyFile(temp, dtypeName(types.at(0).dtype), concreteDims(types[0].shape));
    }
  } catch (const TensorFileError &err) {
    abandonSave(temp);
    throw saveFault(err, temp, f.path);
  }
}

void writeFileBlock(const Inst &in, size_t k, const TensorType &t,
                    const std::vector<int64_t> &offset, const HostTensor &block,
                    const std::string &temp) {
  FileOperand f = parseFileOperand(in.attrs.str);
  try {
    TensorFileEntry e = readTensorFileEntry(temp, f.names.empty() ? "" : f.names.at(k));
    if (e.dtype != dtypeName(t.dtype) || e.shape != concreteDims(t.shape))
      throw TensorFileError(temp + ": changed while it was being written");
    writeTensorBlock(temp, e, offset, block.shape, block.raw());
  } catch (const TensorFileError &err) {
    throw saveFault(err, temp, f.path, "; the old file is unchanged");
  }
}

} // namespace dt
