"""python -m coopreduce info: what was built and which GPUs are usable."""
import sys

from . import info


def main(argv):
    if argv not in ([], ["info"]):
        print("usage: python -m coopreduce [info]", file=sys.stderr)
        return 2
    i = info()
    print(f"coopreduce {i['version']} (canonical order v{i['order_version']})")
    print(f"GPU path:  {'built' if i['gpu_path'] else 'not built (CPU only)'}")
    if not i["gpus"]:
        print("GPUs:      none usable" if i["gpu_path"] else "GPUs:      (not looked for)")
    for g in i["gpus"]:
        cc = "%d.%d" % tuple(g["compute_capability"])
        print(f"GPU {g['ordinal']}:     {g['name']}, sm_{cc.replace('.', '')}, {g['sm_count']} SMs, "
              f"{g['memory_bytes'] / 2**30:.0f} GiB, "
              f"{'usable' if g['usable'] else 'not usable (no code for this architecture)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
