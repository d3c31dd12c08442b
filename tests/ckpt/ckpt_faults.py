#!/usr/bin/env python3
"""Checkpoints under faults, each case on a fresh copy of the committed
fixture (tests/data/ckpt_small) in a temporary folder:

* a flipped byte in a shard: a checksum error naming the shard and tensor;
* a truncated or deleted shard: an error naming the shard and tensor;
* a malformed index: a compile error naming the index;
* a save killed between shards (DTENSOR_TEST_CRASH_IN_SAVE): the previous
  checkpoint still loads with its values and the target folder holds no part
  of the new one; the next save succeeds and cleans up;
* a save over a folder that is not a checkpoint is refused, the folder kept;
* a `save` of a .npy / .safetensors file killed mid-write leaves the old
  file byte for byte (it writes a temporary file renamed over the target);
* under mpirun (one rank a process), ok_checkpoint_reshard.dt prints what
  the cpu backend prints (skipped without mpirun).

Never a crash (exit codes 0, 1 or the hook's 86 only) or a wrong value.

usage: ckpt_faults.py DTENSORC
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

DTENSORC = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "data", "ckpt_small")
LOAD = """mesh m = [x = 3]
let w : f32[4, 3] @ m[_, x] = load_checkpoint("ck", "w")
let v : f32[5] @ m[x] = load_checkpoint("ck", "v")
print("w", relayout(w, m[_, _]), "v", relayout(v, m[_]))
"""
GOOD = "w [[1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 11, 12]] v [0.5, 1.5, 2.5, 3.5, 4.5]\n"
failures = []


def run(folder, text, env=None):
    path = os.path.join(folder, "prog.dt")
    with open(path, "w") as f:
        f.write(text)
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run([DTENSORC, "run", path], capture_output=True, text=True, timeout=120, env=e)
    return r.returncode, r.stdout, r.stderr


def case(name, mutate, want_rc, want_err, want_out=""):
    with tempfile.TemporaryDirectory() as d:
        shutil.copytree(FIXTURE, os.path.join(d, "ck"))
        mutate(os.path.join(d, "ck"))
        rc, out, err = run(d, LOAD)
        ok = rc == want_rc and want_err in err and out == want_out
        if not ok:
            failures.append("%s: rc %d, stdout %r, stderr %r" % (name, rc, out, err))
        print(("PASS " if ok else "FAIL ") + name)


def flip(path, at):
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x10]))


def truncate(path, n):
    with open(path, "r+b") as f:
        f.truncate(n)


case("intact", lambda ck: None, 0, "", GOOD)
case("flipped byte", lambda ck: flip(os.path.join(ck, "rank-00001.bin"), 5), 1,
     "rank-00001.bin: checksum mismatch in tensor `w`")
case("flipped byte in v", lambda ck: flip(os.path.join(ck, "rank-00001.bin"), 26), 1,
     "rank-00001.bin: checksum mismatch in tensor `v`")
case("truncated shard", lambda ck: truncate(os.path.join(ck, "rank-00001.bin"), 10), 1,
     "rank-00001.bin: shard of tensor `w` is truncated")
case("deleted shard", lambda ck: os.remove(os.path.join(ck, "rank-00000.bin")), 1,
     "rank-00000.bin: cannot open shard of tensor `w`")
case("bad index json", lambda ck: open(os.path.join(ck, "index.json"), "w").write("{\"format\": "), 1,
     "index.json: malformed checkpoint index")
case("index checksum changed",
     lambda ck: open(os.path.join(ck, "index.json"), "w").write(
         open(os.path.join(FIXTURE, "index.json")).read().replace("520318861", "520318862")), 1,
     "checksum mismatch in tensor `w`")
case("deleted index", lambda ck: os.remove(os.path.join(ck, "index.json")), 1,
     "index.json: No such file or directory")

# A save killed between shards leaves the previous checkpoint whole.
SAVE = """mesh m = [x = 4]
let w : f32[4, 3] @ m[x, _] = full(%s)
let v : f32[5] @ m[x] = full(%s)
save_checkpoint("ck", "w", w, "v", v)
"""
with tempfile.TemporaryDirectory() as d:
    shutil.copytree(FIXTURE, os.path.join(d, "ck"))
    before = sorted(os.listdir(os.path.join(d, "ck")))
    rc, out, err = run(d, SAVE % (9, 9), {"DTENSOR_TEST_CRASH_IN_SAVE": "1"})
    after = sorted(os.listdir(os.path.join(d, "ck")))
    rc2, out2, err2 = run(d, LOAD)
    ok = rc == 86 and after == before and rc2 == 0 and out2 == GOOD
    print(("PASS " if ok else "FAIL ") + "crash mid-save keeps the previous checkpoint")
    if not ok:
        failures.append("crash: rc %d %r, files %r -> %r, reload rc %d %r %r" %
                        (rc, err, before, after, rc2, out2, err2))
    rc, out, err = run(d, SAVE % (2, 3))
    rc2, out2, err2 = run(d, LOAD)
    ok = (rc == 0 and rc2 == 0 and out2 == "w [[2, 2, 2], [2, 2, 2], [2, 2, 2], [2, 2, 2]] v [3, 3, 3, 3, 3]\n"
          and not os.path.exists(os.path.join(d, "ck.tmp")))
    print(("PASS " if ok else "FAIL ") + "the next save replaces it and cleans up")
    if not ok:
        failures.append("resave: rc %d %r, reload rc %d %r %r" % (rc, err, rc2, out2, err2))
    # A `save` killed mid-write keeps the old file; the next one replaces it.
    for name in ("w.npy", "w.safetensors"):
        tensor = ', "w"' if name.endswith("safetensors") else ""
        prog = ('mesh m = [x = 4]\nlet w : f32[4, 3] @ m[x, _] = full(%%s)\n'
                'save("%s"%s, w)\n' % (name, tensor))
        rc0, _, err0 = run(d, prog % 5)
        good = open(os.path.join(d, name), "rb").read()
        rc, out, err = run(d, prog % 7, {"DTENSOR_TEST_CRASH_IN_SAVE": "1"})
        kept = open(os.path.join(d, name), "rb").read() == good
        rc2, _, err2 = run(d, prog % 7)
        replaced = open(os.path.join(d, name), "rb").read() != good
        rc3, out3, err3 = run(d, 'mesh m = [x = 2]\nlet w : f32[4, 3] @ m[_, x] = load("%s"%s)\n'
                                 'print(relayout(sum(w), m[]))\n' % (name, tensor))
        ok = (rc0 == 0 and rc == 86 and kept and rc2 == 0 and replaced and rc3 == 0 and
              out3 == "84\n")
        print(("PASS " if ok else "FAIL ") + "a save of %s killed mid-write keeps the old file" % name)
        if not ok:
            failures.append("save %s: rc %d %r / %d %r / %d %r, kept %r replaced %r, load %d %r %r" %
                            (name, rc0, err0, rc, err, rc2, err2, kept, replaced, rc3, out3, err3))
    # A save running now (its temporary folder's owner is alive on this
    # host) is not saved over; a crashed one's folder is taken over.
    import socket
    tmp = os.path.join(d, "ck.tmp")
    os.makedirs(tmp, exist_ok=True)
    before = open(os.path.join(d, "ck", "index.json")).read()
    # The owner as an older save recorded it (pid, host), and as a save
    # records it now (with its start time, field 22 of /proc/PID/stat).
    stat = open("/proc/self/stat").read()
    started = stat[stat.rindex(")") + 2:].split()[19]
    for record, what in [("", ""), (" " + started, ", its start time recorded,")]:
        with open(os.path.join(tmp, ".owner"), "w") as f:
            f.write("%d %s%s\n" % (os.getpid(), socket.gethostname(), record))
        rc, out, err = run(d, SAVE % (4, 4))
        ok = rc == 1 and "another run (pid %d) is saving this checkpoint" % os.getpid() in err and \
            open(os.path.join(d, "ck", "index.json")).read() == before
        print(("PASS " if ok else "FAIL ") + "a save running now%s is not saved over" % what)
        if not ok:
            failures.append("concurrent%s: rc %d %r" % (what, rc, err))
    dead = subprocess.Popen(["true"])
    dead.wait()
    with open(os.path.join(tmp, ".owner"), "w") as f:
        f.write("%d %s\n" % (dead.pid, socket.gethostname()))
    rc, out, err = run(d, SAVE % (4, 4))
    rc2, out2, err2 = run(d, LOAD)
    ok = rc == 0 and rc2 == 0 and out2.startswith("w [[4, 4, 4]") and not os.path.exists(tmp)
    print(("PASS " if ok else "FAIL ") + "a crashed save's temporary folder is taken over")
    if not ok:
        failures.append("stale owner: rc %d %r, reload %d %r %r" % (rc, err, rc2, out2, err2))
    # A killed save whose process is a zombie (its parent has not reaped it
    # yet: a restart right after the kill) or whose pid now belongs to
    # another process (the start time differs) is a crashed save too.
    zombie = subprocess.Popen(["true"])
    time.sleep(0.3)  # exited, not waited for: a zombie
    os.makedirs(tmp, exist_ok=True)
    with open(os.path.join(tmp, ".owner"), "w") as f:
        f.write("%d %s 1\n" % (zombie.pid, socket.gethostname()))
    rc, out, err = run(d, SAVE % (5, 5))
    zombie.wait()
    ok_z = rc == 0 and not os.path.exists(tmp)
    os.makedirs(tmp, exist_ok=True)
    with open(os.path.join(tmp, ".owner"), "w") as f:  # this script's pid, another start time
        f.write("%d %s 1\n" % (os.getpid(), socket.gethostname()))
    rc2, out2, err2 = run(d, SAVE % (6, 6))
    rc3, out3, err3 = run(d, LOAD)
    ok = ok_z and rc2 == 0 and rc3 == 0 and out3.startswith("w [[6, 6, 6]")
    print(("PASS " if ok else "FAIL ") + "a zombie's or a reused pid's temporary folder is taken over")
    if not ok:
        failures.append("zombie/reused owner: rc %d %r / %d %r, reload %d %r" %
                        (rc, err, rc2, err2, rc3, out3))
    # A folder that is not a checkpoint is never replaced.
    os.mkdir(os.path.join(d, "data"))
    open(os.path.join(d, "data", "keep.txt"), "w").write("mine")
    rc, out, err = run(d, (SAVE % (1, 1)).replace('"ck"', '"data"'))
    ok = rc == 1 and "exists and is not a checkpoint" in err and \
        open(os.path.join(d, "data", "keep.txt")).read() == "mine"
    print(("PASS " if ok else "FAIL ") + "a folder that is not a checkpoint is kept")
    if not ok:
        failures.append("not a checkpoint: rc %d %r" % (rc, err))

# Ranks as processes: the same values as the cpu backend.
mpirun = shutil.which("mpirun")
if mpirun:
    prog = os.path.join(HERE, "..", "lang", "ok_checkpoint_reshard.dt")
    want = "".join(l[len("# expect: "):] for l in open(prog) if l.startswith("# expect: "))
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    text = open(prog).read().replace("/tmp/dt_lang_ckpt_reshard", "/tmp/dt_mpi_ckpt_reshard")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "prog.dt")
        open(path, "w").write(text)
        r = subprocess.run([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "4", DTENSORC,
                            "run", path, "--backend", "mpi"], capture_output=True, text=True,
                           timeout=180, env=env)
        ok = r.returncode == 0 and r.stdout == want
        print(("PASS " if ok else "FAIL ") + "mpi: save and load with ranks as processes")
        if not ok:
            failures.append("mpi: rc %d %r %r" % (r.returncode, r.stdout, r.stderr))
else:
    print("SKIP mpi: no mpirun")

if failures:
    print("\n".join(failures))
    sys.exit(1)
