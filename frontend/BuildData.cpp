// This file implements `load` and `save` of tensor files (support/TensorFile.h)
// in the IR builder: the file's header is read at compile time, so a wrong
// dtype or shape is a diagnostic at the call, not a run-time surprise. Also
// `time()`, the program's clock.
#include "frontend/BuildIR.h"

#include "support/Checkpoint.h"
#include "support/TensorFile.h"

#include <algorithm>
#include <filesystem>
#include <set>

namespace dt {

std::string IRBuilder::dataPath(const std::string &path, SrcLoc loc) {
  std::filesystem::path p(path);
  if (p.is_absolute() || loc.file < 0 || loc.file >= s_.sources.count())
    return path;
  auto dir = std::filesystem::path(s_.sources.path(loc.file)).parent_path();
  return (dir / p).lexically_normal().string();
}

EV IRBuilder::loadCall(const ast::Expr &e, const TensorType *declared) {
  if (!s_.options.fileAccess) {
    diags().error<DiagId::FileAccessOff>(e.loc, "load");
    return EV::bad();
  }
  size_t n = e.args.size();
  if (n < 1 || n > 2 || e.args[0]->kind != ast::Expr::String ||
      (n == 2 && e.args[1]->kind != ast::Expr::String)) {
    diags().error<DiagId::LoadArgs>(e.loc);
    return EV::bad();
  }
  std::string path = dataPath(e.args[0]->text, e.loc);
  std::string key = n == 2 ? e.args[1]->text : "";
  bool st = isSafetensorsPath(path);
  if (st != (n == 2)) {
    diags().error<DiagId::LoadArgs>(e.loc).hint =
        st ? "a safetensors file holds several tensors: name the one to load"
           : "only a `.safetensors` file holds named tensors";
    return EV::bad();
  }
  Attrs a;
  a.str = path + (st ? "\n" + key : "");
  // A file an earlier `save` of the program writes holds what that save
  // writes, whatever is on disk now (the run checks it again).
  TensorFileEntry fe;
  bool known = false;
  if (auto saved = st_.filesSaved.find(path); saved != st_.filesSaved.end()) {
    auto it = saved->second.find(key);
    if (it == saved->second.end()) {
      diags().error<DiagId::TensorFileBad>(
          e.args[1]->loc, path + ": the `save` above writes no tensor named `" + key + "`");
      return EV::bad();
    }
    if (isConcrete(it->second.shape)) {
      fe.dtype = dtypeName(it->second.dtype);
      fe.shape = concreteDims(it->second.shape);
      known = true;
    } else if (!declared) {
      diags()
          .error<DiagId::TensorFileBad>(e.args[0]->loc,
                                        path + ": the `save` above writes a tensor of a "
                                               "shape known only when it runs")
          .hint = "declare the loaded type: `let x : " + it->second.str() + " = load(...)`";
      return EV::bad();
    }
  }
  // A declared load of a file that does not exist yet (or that a save of
  // a shape known only at run time writes) is checked when it runs.
  std::error_code ec;
  if (!known && declared && (st_.filesSaved.count(path) || !std::filesystem::exists(path, ec))) {
    if (declared->hasPartial() || !isConcrete(declared->shape)) {
      diags().error<DiagId::TensorFileBad>(e.args[0]->loc, path + ": no such file");
      return EV::bad();
    }
    return emit(Op::LoadFile, {}, {}, e.loc, a, {*declared});
  }
  if (!known) {
    try {
      fe = readTensorFileEntry(path, key);
    } catch (const TensorFileError &err) {
      diags().error<DiagId::TensorFileBad>(e.args[0]->loc, err.what());
      return EV::bad();
    }
  }
  DType dt = *parseDType(fe.dtype);
  Shape shape;
  for (int64_t d : fe.shape)
    shape.push_back(Dim::lit(d));
  std::string held = fe.dtype + shapeStr(shape);
  TensorType t = declared ? *declared : TensorType{dt, shape, nullptr, {}};
  if (declared) {
    if (t.dtype != dt || !isConcrete(t.shape) || concreteDims(t.shape) != fe.shape) {
      diags()
          .error<DiagId::TensorFileMismatch>(e.loc, e.args[0]->text + (st ? " " + key : ""), held,
                                             t.str())
          .hint =
          "declare `" + held + (t.isHost() ? "" : " @ ...") + "`, or cast/reshape after loading";
      return EV::bad();
    }
    if (t.hasPartial()) {
      diags().error<DiagId::TensorFileMismatch>(e.loc, e.args[0]->text, held, t.str()).hint =
          "a file holds a whole value: load it `replicate` or `shard`ed, then relayout";
      return EV::bad();
    }
  }
  return emit(Op::LoadFile, {}, {}, e.loc, a, {t});
}

EV IRBuilder::saveCall(const ast::Expr &e) {
  if (!s_.options.fileAccess) {
    diags().error<DiagId::FileAccessOff>(e.loc, "save");
    return EV::bad();
  }
  size_t n = e.args.size();
  bool ok = n >= 2 && e.args[0]->kind == ast::Expr::String;
  std::string path = ok ? dataPath(e.args[0]->text, e.loc) : "";
  bool st = isSafetensorsPath(path);
  if (ok && st)
    ok = n >= 3 && (n - 1) % 2 == 0;
  else if (ok)
    ok = n == 2;
  if (ok && st)
    for (size_t i = 1; i < n; i += 2)
      ok = ok && e.args[i]->kind == ast::Expr::String;
  if (!ok) {
    diags().error<DiagId::SaveArgs>(e.loc);
    return EV::bad();
  }
  if (e.args[0]->text.empty()) {
    diags().error<DiagId::SaveArgs>(e.args[0]->loc).hint = "the file path is empty";
    return EV::bad();
  }
  // The extension names the format: anything else would be an `.npy` file
  // under another name.
  const std::string &asWritten = e.args[0]->text;
  if (!st && (asWritten.size() < 4 || asWritten.compare(asWritten.size() - 4, 4, ".npy") != 0)) {
    diags().error(DiagId::SaveExtension, e.args[0]->loc, {asWritten}).hint =
        "name it `name.npy` (one tensor) or `name.safetensors` (named tensors)";
    return EV::bad();
  }
  if (st && !namesOneLine(e, "save"))
    return EV::bad();
  Attrs a;
  a.str = path;
  std::vector<EV> vals;
  std::vector<const ast::Expr *> exs;
  std::set<std::string> seen;
  for (size_t i = st ? 2 : 1; i < n; i += st ? 2 : 1) {
    if (st && !seen.insert(e.args[i - 1]->text).second) {
      diags().error<DiagId::CheckpointDuplicate>(e.args[i - 1]->loc, e.args[i - 1]->text,
                                                 "safetensors file");
      return EV::bad();
    }
    if (st && e.args[i - 1]->text == "__metadata__") {
      // The header's key for the file's metadata: a tensor there is lost.
      diags().error<DiagId::TensorNameReserved>(e.args[i - 1]->loc, "__metadata__").hint =
          "give the tensor another name";
      return EV::bad();
    }
    EV v = expr(*e.args[i]);
    if (v.poison)
      return v;
    if (v.literal || v.ids.size() != 1) {
      diags().error<DiagId::NeedsTensor>(e.args[i]->loc, "save");
      return EV::bad();
    }
    if (!st && typeOf(v.ids[0]).dtype == DType::BF16) {
      diags().error<DiagId::NpyNoBf16>(e.args[i]->loc).hint =
          "save it to a `.safetensors` file (dtype `BF16`), or `cast` it to f32 first";
      return EV::bad();
    }
    vals.push_back(v);
    exs.push_back(e.args[i].get());
    if (st)
      a.str += "\n" + e.args[i - 1]->text;
  }
  // What a later `load` of this file reads: the whole file is rewritten.
  auto &written = st_.filesSaved[path];
  written.clear();
  for (size_t k = 0; k < vals.size(); ++k) {
    const TensorType &t = typeOf(vals[k].ids[0]);
    written[st ? e.args[1 + 2 * k]->text : ""] = TensorType{t.dtype, t.shape, nullptr, {}};
  }
  return emit(Op::SaveFile, vals, exs, e.loc, a, {});
}

EV IRBuilder::loadCheckpointCall(const ast::Expr &e, const TensorType *declared) {
  if (!s_.options.fileAccess) {
    diags().error<DiagId::FileAccessOff>(e.loc, "load_checkpoint");
    return EV::bad();
  }
  if (e.args.size() != 2 || !e.kwargs.empty() || e.args[0]->kind != ast::Expr::String ||
      e.args[1]->kind != ast::Expr::String) {
    diags().error<DiagId::LoadCheckpointArgs>(e.loc);
    return EV::bad();
  }
  std::string dir = dataPath(e.args[0]->text, e.loc), name = e.args[1]->text;
  Attrs a;
  a.str = dir + "\n" + name;
  // The load's type: what the checkpoint holds (`held`), or the declared
  // type when it has the same dtype and shape and no partial axis. `whose`
  // says in the hint where `held` comes from.
  auto loadHeld = [&](const TensorType &held, const std::string &whose) {
    if (!declared)
      return emit(Op::LoadCheckpoint, {}, {}, e.loc, a, {held});
    std::string what = e.args[0]->text + " " + name;
    if (declared->dtype != held.dtype || declared->shape != held.shape) {
      diags().error<DiagId::TensorFileMismatch>(e.loc, what, held.str(), declared->str()).hint =
          "declare `" + held.str() + (declared->isHost() ? "" : " @ ...") + "`" + whose +
          ", or cast/reshape after loading";
      return EV::bad();
    }
    if (declared->hasPartial()) {
      diags().error<DiagId::TensorFileMismatch>(e.loc, what, held.str(), declared->str()).hint =
          "a checkpoint holds whole values: load it `replicate` or `shard`ed, then relayout";
      return EV::bad();
    }
    return emit(Op::LoadCheckpoint, {}, {}, e.loc, a, {*declared});
  };
  // A checkpoint saved earlier in the program: its type is what that save
  // writes, not what the folder holds now (the run checks it again).
  if (auto saved = st_.checkpointsSaved.find(dir); saved != st_.checkpointsSaved.end()) {
    auto it = saved->second.find(name);
    if (it == saved->second.end()) {
      std::string names;
      for (auto &[n, t] : saved->second)
        names += (names.empty() ? "`" : ", `") + n + "`";
      diags()
          .error<DiagId::CheckpointBad>(
              e.args[1]->loc, dir + ": the save_checkpoint above writes no tensor `" + name + "`")
          .hint = "it writes " + names;
      return EV::bad();
    }
    return loadHeld(it->second, " (what the save_checkpoint above writes)");
  }
  std::error_code ec;
  if (declared && !std::filesystem::exists(dir, ec)) {
    if (declared->hasPartial() || !isConcrete(declared->shape)) {
      diags().error<DiagId::CheckpointBad>(e.args[0]->loc, dir + ": no such checkpoint");
      return EV::bad();
    }
    return emit(Op::LoadCheckpoint, {}, {}, e.loc, a, {*declared});
  }
  CheckpointIndex ix;
  try {
    ix = readCheckpointIndex(dir);
  } catch (const TensorFileError &err) {
    diags().error<DiagId::CheckpointBad>(e.args[0]->loc, err.what());
    return EV::bad();
  }
  auto it = ix.tensors.find(name);
  if (it == ix.tensors.end()) {
    diags().error<DiagId::CheckpointBad>(e.args[1]->loc,
                                         checkpointIndexPath(dir) + ": no tensor `" + name + "`");
    return EV::bad();
  }
  const CheckpointTensor &ct = it->second;
  Shape shape;
  for (int64_t d : ct.shape)
    shape.push_back(Dim::lit(d));
  return loadHeld(TensorType{*parseDType(ct.dtype), shape, nullptr, {}}, "");
}

bool IRBuilder::namesOneLine(const ast::Expr &e, const std::string &fn) {
  // Each name is one line of the op's `str` (a newline would move the names
  // after it onto the wrong values), and a control byte has no place in one.
  for (size_t i = 1; i < e.args.size(); i += 2) {
    const std::string &name = e.args[i]->text;
    if (std::any_of(name.begin(), name.end(),
                    [](char c) { return (unsigned char)c < 0x20 || c == 0x7f; })) {
      diags().error(DiagId::TensorNameControl, e.args[i]->loc, {fn}).hint =
          "use letters, digits and punctuation such as `layers.0.w`";
      return false;
    }
  }
  return true;
}

EV IRBuilder::saveCheckpointCall(const ast::Expr &e) {
  if (!s_.options.fileAccess) {
    diags().error<DiagId::FileAccessOff>(e.loc, "save_checkpoint");
    return EV::bad();
  }
  size_t n = e.args.size();
  bool ok = n >= 3 && (n - 1) % 2 == 0 && e.kwargs.empty() && e.args[0]->kind == ast::Expr::String;
  for (size_t i = 1; ok && i < n; i += 2)
    ok = e.args[i]->kind == ast::Expr::String;
  if (ok && e.args[0]->text.empty()) {
    diags().error<DiagId::SaveCheckpointArgs>(e.args[0]->loc).hint =
        "the checkpoint folder's path is empty";
    return EV::bad();
  }
  if (!ok) {
    diags().error<DiagId::SaveCheckpointArgs>(e.loc);
    return EV::bad();
  }
  if (!namesOneLine(e, "save_checkpoint"))
    return EV::bad();
  Attrs a;
  a.str = dataPath(e.args[0]->text, e.loc);
  std::vector<EV> vals;
  std::vector<const ast::Expr *> exs;
  std::set<std::string> seen;
  for (size_t i = 2; i < n; i += 2) {
    const std::string &name = e.args[i - 1]->text;
    if (!seen.insert(name).second) {
      diags().error<DiagId::CheckpointDuplicate>(e.args[i - 1]->loc, name, "checkpoint");
      return EV::bad();
    }
    EV v = expr(*e.args[i]);
    if (v.poison)
      return v;
    if (v.literal || v.ids.size() != 1) {
      auto &d = diags().error<DiagId::NeedsTensor>(e.args[i]->loc, "save_checkpoint");
      if (v.parts.size() == 1 && v.parts[0]) { // a struct: name its fields
        std::string fields;
        const std::string &what = e.args[i]->text.empty() ? name : e.args[i]->text;
        for (auto &[path, t] : v.parts[0]->leaves)
          fields += ", \"" + name + "." + path + "\", " + what + "." + path;
        d.hint = "a checkpoint holds tensors: save each field under its own name, as "
                 "`save_checkpoint(\"" +
                 e.args[0]->text + "\"" + fields + ")`";
      }
      return EV::bad();
    }
    vals.push_back(v);
    exs.push_back(e.args[i].get());
    a.str += "\n" + name;
  }
  auto &written = st_.checkpointsSaved[dataPath(e.args[0]->text, e.loc)];
  written.clear(); // a save writes the whole checkpoint anew
  for (size_t k = 0; k < vals.size(); ++k) {
    const TensorType &t = typeOf(vals[k].ids[0]);
    written[e.args[1 + 2 * k]->text] = TensorType{t.dtype, t.shape, nullptr, {}};
  }
  return emit(Op::SaveCheckpoint, vals, exs, e.loc, a, {});
}

EV IRBuilder::timeCall(const ast::Expr &e) {
  if (!e.args.empty() || !e.kwargs.empty()) {
    diags().error(DiagId::ArgCount, e.loc,
                  {"time", "0", std::to_string(e.args.size() + e.kwargs.size())});
    return EV::bad();
  }
  return emit(Op::Time, {}, {}, e.loc, Attrs{}, {TensorType{DType::F64, {}, nullptr, {}}});
}

} // namespace dt
