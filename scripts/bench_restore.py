"""Benchmark: restoring checkpoints, rewindfs vs Hermes Agent 0.19, side by side.

Each tool gets its own copy of the same generated 5,000-file project and its own
checkpoint base. Both take a target checkpoint, then ten more checkpoints that
each change one file. Every repeat re-edits those ten files (untimed), then times:

  full restore to the checkpoint 10 changes back     target: >= 5x faster
  single-file restore of one changed file            target: >= 20x faster

A benchmark, not a test: missed targets are reported, never asserted. It exits
non-zero only if a restore fails or leaves files different from the checkpoint.
"""

from __future__ import annotations

import logging
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as bl  # noqa: E402

CHANGES = 10
# Large enough that neither tool prunes during the run: Hermes's pruning rewrites
# every hash (and gc's the old ones), which would make its target unreachable.
MAX_SNAPSHOTS = 200


def main(argv: list[str] | None = None) -> int:
    args = bl.parse_args(argv, __doc__, "a fifth of the project size", 5)
    logging.disable(logging.CRITICAL)
    import tools.checkpoint_manager as hcm

    import rewindfs

    report = bl.Reporter()
    with bl.tmp_dir(args, "bench-restore-") as tmp:
        scale = 5 if args.quick else 1
        report.progress(f"generating project ({5000 // scale} files) in {tmp}")
        source = bl.generate_project(tmp / "source", files=5000 // scale,
                                     total_bytes=50 * bl.MiB // scale, seed=args.seed)
        dirs = {name: tmp / name / "project" for name in ("hermes", "rewind")}
        for d in dirs.values():
            shutil.copytree(source.root, d, symlinks=True)

        hermes = hcm.CheckpointManager(enabled=True, max_snapshots=MAX_SNAPSHOTS)
        ours = rewindfs.CheckpointManager(enabled=True, max_snapshots=MAX_SNAPSHOTS,
                                          base=tmp / "rewind" / "base")
        hermes_base = tmp / "hermes" / "base"

        def use_hermes_base() -> None:
            hcm.CHECKPOINT_BASE = hermes_base  # a module constant Hermes reads per call

        changed = [source.files[(i * 7919) % len(source.files)] for i in range(CHANGES)]

        def edit(i: int) -> None:
            for d in dirs.values():
                for rel in changed:
                    with open(d / rel, "a") as fh:
                        fh.write(f"// repeat {i}\n")

        report.progress("taking the target checkpoint and ten later ones")
        targets = {}
        for name, mgr in (("hermes", hermes), ("rewind", ours)):
            if name == "hermes":
                use_hermes_base()
            mgr.new_turn()
            mgr.ensure_checkpoint(str(dirs[name]), "target")
            targets[name] = mgr.list_checkpoints(str(dirs[name]))[0]["hash"]
        for i, rel in enumerate(changed):
            for name, mgr in (("hermes", hermes), ("rewind", ours)):
                with open(dirs[name] / rel, "a") as fh:
                    fh.write(f"// change {i}\n")
                if name == "hermes":
                    use_hermes_base()
                mgr.new_turn()
                mgr.ensure_checkpoint(str(dirs[name]), f"change {i}")

        def full(name, mgr):
            def run():
                if name == "hermes":
                    use_hermes_base()
                return mgr.restore(str(dirs[name]), targets[name])["success"]
            return run

        def single(name, mgr):
            def run():
                if name == "hermes":
                    use_hermes_base()
                return mgr.restore(str(dirs[name]), targets[name], changed[0].as_posix())["success"]
            return run

        rows, problems = [], []
        for case, make, goal in (("full restore, 10 changes back", full, 5),
                                 ("single-file restore", single, 20)):
            report.progress(f"timing: {case}")
            timings = bl.measure({"Hermes 0.19": make("hermes", hermes),
                                  "rewindfs": make("rewind", ours)},
                                 args.repeats, setup=edit)
            for tool, t in timings.items():
                if not all(t.results):
                    problems.append(f"{case}: {tool} reported a failed restore")
            h, r = timings["Hermes 0.19"].median, timings["rewindfs"].median
            text, ratio = bl.ratio_cell(h, r)
            rows.append([case, bl.fmt_seconds(h), bl.fmt_seconds(r), text, f">= {goal}x",
                         "yes" if ratio and ratio >= goal else "**NO**"])
        problems += verify(dirs, source.root, changed)

        out = ["## bench_restore", "", bl.markdown_table(["item", "value"], bl.machine_info()),
               "", f"project: {len(source.files)} files, {source.total_bytes / bl.MiB:.0f} MiB"
               f" (+{source.ignored_files} in node_modules), median of {args.repeats}", "",
               bl.markdown_table(["case", "Hermes 0.19", "rewindfs", "ratio", "target", "met?"],
                                 rows)]
        return bl.emit(out, problems, args)


def verify(dirs: dict[str, Path], source: Path, changed: list[Path]) -> list[str]:
    """After the last (single-file) restore, the restored file equals the original."""
    problems = []
    for name, d in dirs.items():
        original = (source / changed[0]).read_bytes()
        if (d / changed[0]).read_bytes() != original:
            problems.append(f"{name}: {changed[0]} differs from the target checkpoint")
    return problems



if __name__ == "__main__":
    sys.exit(main())
