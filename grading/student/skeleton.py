"""`reset LAB [STAGE]`: gives a lab's kernels.cu its skeleton back, the
whole file or one stage's section, after a timestamped backup of the
student's file next to it.

Where the skeleton comes from: grading/skeletons/<folder>/kernels.cu when the
copy ships one; else git (`--from REV`, default HEAD) when kernels.cu is
tracked there. A stage's section runs from a rule comment naming the stage
("/* ===== stage 1 */", "// ---- stages 3 and 4: ...") to the next rule
comment; labs whose skeleton has no such sections are reset whole.
"""
import argparse
import re
import subprocess
import time
from pathlib import Path

from shared import labs
from .ui import Style, fail, lab_or_exit

ROOT = Path(labs.ROOT)
RULE = re.compile(r"^\s*(?:/\*|//)\s*(?:[-=]{3,}\s*)+(.*?)\s*(?:\*/)?\s*$")


def find_skeleton(folder, rev=None):
    """(text, where it came from) of the lab's skeleton, or (None, why
    there is none here)."""
    relative = f"labs/{folder}/kernels.cu"
    shipped = ROOT / "grading" / "skeletons" / folder / "kernels.cu"
    if rev is None and shipped.is_file():
        return shipped.read_text(), str(shipped.relative_to(ROOT))
    revision = rev or "HEAD"
    try:
        proc = subprocess.run(["git", "-C", str(ROOT), "show", f"{revision}:{relative}"],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"git cannot be asked ({e})"
    if proc.returncode != 0:
        return None, (f"this copy ships none (grading/skeletons/) and git has none at {revision} "
                      f"({proc.stderr.strip()[:200]})")
    return proc.stdout, f"git {revision}"


def skeleton_text(folder, rev):
    """(text, where it came from) of the lab's skeleton; exits with a
    sentence when there is none."""
    text, source = find_skeleton(folder, rev)
    if text is None:
        fail(f"no skeleton of labs/{folder}/kernels.cu here: {source}. Unpack your copy of the "
             "workbook again somewhere else and copy the file from there.", status=1)
    return text, source


def untouched(folder):
    """Whether the lab's kernels.cu is still its skeleton (a lab not started:
    its tests fail because nothing is written yet). False when no skeleton
    is known to compare with."""
    try:
        mine = (ROOT / "labs" / folder / "kernels.cu").read_text()
    except OSError:
        return False
    return find_skeleton(folder)[0] == mine


def stages_of(title):
    """The stages a rule comment's title names: "stage 3" -> [3],
    "stages 3 and 4: ..." -> [3, 4], anything else -> []."""
    match = re.match(r"stages?\s+([\d,\sand]+)", title.lower())
    return [int(n) for n in re.findall(r"\d+", match.group(1))] if match else []


def sections(text):
    """[(first line, end line, stages)] of the rule-comment sections."""
    lines = text.splitlines(keepends=True)
    starts = [(i, stages_of(m.group(1))) for i, l in enumerate(lines) for m in [RULE.match(l)] if m]
    return [(start, starts[k + 1][0] if k + 1 < len(starts) else len(lines), stages)
            for k, (start, stages) in enumerate(starts)]


def section_of(text, stage):
    lines = text.splitlines(keepends=True)
    for start, end, stages in sections(text):
        if stage in stages:
            return start, end, "".join(lines[start:end])
    return None


def restore(folder, stage, skeleton, mine):
    """The new text of the student's file, and what was restored."""
    if stage is None:
        return skeleton, "the whole file"
    theirs = section_of(skeleton, stage)
    if theirs is None:
        fail(f"the skeleton of labs/{folder}/kernels.cu is not split into a section per stage: "
             f"reset the whole file with `grading/workbook reset {folder}`")
    ours = section_of(mine, stage)
    if ours is None:
        fail(f"your labs/{folder}/kernels.cu no longer has stage {stage}'s section heading "
             f"({theirs[2].splitlines()[0].strip()}): reset the whole file with "
             f"`grading/workbook reset {folder}`")
    lines = mine.splitlines(keepends=True)
    return "".join(lines[:ours[0]]) + theirs[2] + "".join(lines[ours[1]:]), f"stage {stage}'s section"


def reset(args):
    folder, name = lab_or_exit(args.lab)
    target = ROOT / "labs" / folder / "kernels.cu"
    skeleton, source = skeleton_text(folder, args.rev)
    mine = target.read_text() if target.exists() else ""
    new, what = restore(folder, args.stage, skeleton, mine)
    if new == mine:
        print(f"labs/{folder}/kernels.cu: {what} is already the skeleton's: nothing to do.")
        return 0
    backup = target.with_name(f"kernels.cu.{time.strftime('%Y%m%d-%H%M%S')}.bak")
    if mine:
        backup.write_text(mine)
    target.write_text(new)
    print(f"Restored {what} of labs/{folder}/kernels.cu from the skeleton ({source}).")
    if mine:
        print(Style.bold(f"Your previous file is kept in {backup.relative_to(ROOT)}") +
              f" (to undo: cp {backup.relative_to(ROOT)} labs/{folder}/kernels.cu).")
    return 0


def add_command(sub):
    r = sub.add_parser("reset", help="give a lab's kernels.cu its skeleton back (yours is backed up)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("lab")
    r.add_argument("stage", type=int, nargs="?",
                   help="only this stage's section (labs whose file has one section per stage)")
    r.add_argument("--from", dest="rev", metavar="REV",
                   help="take the skeleton from this git revision (default: the copy's own "
                        "grading/skeletons/, else git's HEAD); where you commit your work in "
                        "git, give the first commit, which holds the skeleton as handed out")
    r.set_defaults(func=reset)
