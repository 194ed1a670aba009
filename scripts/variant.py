#!/usr/bin/env python3
"""variant.py BUILD NAME SOURCE [--from REV] [-DFLAG=VALUE ...] — a variant of the library for measuring:
SOURCE (a file of the library, such as src/gpu/rows.cu) compiled again with the extra flags, as
BUILD compiled it, and the library relinked with that object to /tmp/v_NAME/libcoopreduce.so.0.
--from REV compiles SOURCE as it is at git revision REV (the headers it includes as they are
now): the committed code as a baseline beside the working tree's.
Run any program of BUILD against it with LD_PRELOAD=/tmp/v_NAME/libcoopreduce.so.0 (the same
soname: the preloaded copy serves the program), so that builds differing by a tuning macro are
compared on one machine in one call, interleaved. BUILD must be configured with
-DCMAKE_EXPORT_COMPILE_COMMANDS=ON and built (docs/perf-log: the variants of runs 84-92)."""
import json
import os
import shlex
import subprocess
import sys

if len(sys.argv) < 4:
    sys.exit(__doc__)
build, name, source, flags = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
rev = None
if flags[:1] == ["--from"] and len(flags) >= 2:
    rev, flags = flags[1], flags[2:]
out = f"/tmp/v_{name}"
os.makedirs(out, exist_ok=True)
entries = json.load(open(f"{build}/compile_commands.json"))
match = [e for e in entries if e["file"].endswith(source) and "coopreduce.dir" in e["command"]]
if not match:
    sys.exit(f"variant.py: {source} is not a source of the library in {build}")
entry = match[0]
args = shlex.split(entry["command"])
obj_old = args[args.index("-o") + 1]
obj = f"{out}/{os.path.basename(obj_old)}"
args[args.index("-o") + 1] = obj
args[1:1] = flags
if rev:
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    old_text = subprocess.run(["git", "show", f"{rev}:{source}"], cwd=repo, check=True,
                              capture_output=True).stdout
    old_src = f"{out}/{os.path.basename(source)}"
    open(old_src, "wb").write(old_text)
    args = [old_src if a == entry["file"] else a for a in args]
    if old_src not in args:
        sys.exit(f"variant.py: {entry['file']} is not on its compile line")
subprocess.run(args, cwd=entry["directory"], check=True)
# The link line: the objects in a response file (@...objects...) or on the line itself,
# whichever this CMake writes.
link_txt = f"{build}/CMakeFiles/coopreduce.dir/link.txt"
if not os.path.exists(link_txt):
    sys.exit(f"variant.py: {build} has no {link_txt[len(build) + 1:]} to relink with (a Ninja "
             "build, such as scripts/gpu-check.sh makes where ninja is installed?): configure "
             "the build with -G 'Unix Makefiles' (gpu-check.sh: CMAKE_GENERATOR='Unix "
             "Makefiles')")
link = shlex.split(open(link_txt).read())
rsp = [a for a in link if a.startswith("@") and "objects" in a]
if rsp:
    objs = shlex.split(open(os.path.join(build, rsp[0][1:])).read())
    objs = [obj if o.endswith(obj_old) else o for o in objs]
    open(f"{out}/objects.rsp", "w").write("\n".join(objs) + "\n")
    link = [f"@{out}/objects.rsp" if a == rsp[0] else a for a in link]
else:
    link = [obj if a.endswith(obj_old) else a for a in link]
link[link.index("-o") + 1] = f"{out}/libcoopreduce.so.0"
subprocess.run(link, cwd=build, check=True)
print(f"variant {name}: {out}/libcoopreduce.so.0")
