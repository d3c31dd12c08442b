// This file implements load_file / save_file blocks (see TensorIO.h).
#include "runtime/TensorIO.h"

#include "support/Errors.h"
#include "support/TensorFile.h"

namespace dt {

namespace {

std::string where(const Inst &in) {
  return " (line " + std::to_string(in.loc.line) + ":" + std::to_string(in.loc.col) + ")";
}

TensorFileEntry entryFor(const Inst &in, const TensorType &t, const std::string &path,
                         const std::string &name) {
  TensorFileEntry e;
  try {
    e = readTensorFileEntry(path, name);
  } catch (const TensorFileError &err) {
    throw RuntimeFault(std::string("load") + where(in) + ": " + err.what());
  }
  if (e.dtype != dtypeName(t.dtype) || e.shape != concreteDims(t.shape)) {
    std::string dims;
    for (size_t i = 0; i < e.shape.size(); ++i)
      dims += (i ? ", " : "") + std::to_string(e.shape[i]);
    throw RuntimeFault("load" + where(in) + ": " + path + (name.empty() ? "" : " `" + name + "`") +
                       " now holds " + e.dtype + "[" + dims + "], not the `" + t.str() +
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
  TensorFileEntry e = entryFor(in, t, f.path, f.names.empty() ? "" : f.names[0]);
  HostTensor r(t.dtype, shape);
  try {
    readTensorBlock(f.path, e, offset, shape, r.raw());
  } catch (const TensorFileError &err) {
    throw RuntimeFault(std::string("load") + where(in) + ": " + err.what());
  }
  return r;
}

void createSaveFile(const Inst &in, const std::vector<TensorType> &types) {
  FileOperand f = parseFileOperand(in.attrs.str);
  try {
    if (isSafetensorsPath(f.path)) {
      std::vector<std::pair<std::string, TensorFileEntry>> ts;
      for (size_t k = 0; k < types.size(); ++k) {
        TensorFileEntry e;
        e.dtype = dtypeName(types[k].dtype);
        e.shape = concreteDims(types[k].shape);
        ts.push_back({f.names.at(k), e});
      }
      createSafetensorsFile(f.path, ts);
    } else {
      createNpyFile(f.path, dtypeName(types.at(0).dtype), concreteDims(types[0].shape));
    }
  } catch (const TensorFileError &err) {
    throw RuntimeFault(std::string("save") + where(in) + ": " + err.what());
  }
}

void writeFileBlock(const Inst &in, size_t k, const TensorType &t,
                    const std::vector<int64_t> &offset, const HostTensor &block) {
  FileOperand f = parseFileOperand(in.attrs.str);
  try {
    TensorFileEntry e = readTensorFileEntry(f.path, f.names.empty() ? "" : f.names.at(k));
    if (e.dtype != dtypeName(t.dtype) || e.shape != concreteDims(t.shape))
      throw TensorFileError(f.path + ": changed while it was being written");
    writeTensorBlock(f.path, e, offset, block.shape, block.raw());
  } catch (const TensorFileError &err) {
    throw RuntimeFault(std::string("save") + where(in) + ": " + err.what());
  }
}

} // namespace dt
