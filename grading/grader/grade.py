"""The autograder. Per submission: a private workspace with the trusted
tree (trees.py), configured and built once for all its labs (one ninja
run); then each lab's build (labgrade.py: the student's kernels.cu compiled
in a sandbox, checked by objcheck.py, linked with the trusted test), the
labs side by side; then the tests (testplan.py: the correctness tests side
by side, the timed ones alone), each recorded in a sandbox and judged by the
reference's binary (judge.py); each lab scored with the rubric; reports
written (reports.py). grading/README.md documents the design and its
threat model."""
import os
import secrets
import signal
import sys
import time
import traceback

from shared import labs
from .labgrade import LabGrade
from .phases import Phases
from . import pool
from . import reports
from . import rubric
from . import sandbox
from . import submission
from . import testplan
from . import trees

class GraderError(Exception):
    """The grader (not the submission) could not grade: the trusted tree
    does not build, the reference fails its own test, ..."""


# --------------------------------------------------------------- one lab
def student_source(folder, files, notes):
    """The submission's kernels.cu for the lab, or the skeleton (with a note)
    when the submission has none."""
    data = files.get((folder, "kernels.cu")) if files is not None else None
    if data is None:
        with open(os.path.join(labs.ROOT, "labs", folder, "kernels.cu"), "rb") as f:
            data = f.read()
        if files is not None:
            notes[folder] = "not in the submission: graded the skeleton"
    return data


# ------------------------------------------------------------ submission
def grade_submission(args, phases):
    """Grades one submission; returns the report dict (reports.py)."""
    selected = [labs.find_lab(n) for n in args.lab] if args.lab else labs.all_labs()
    defaults, lab_rubrics = rubric.load(args.rubric)
    seed = args.seed or str(secrets.randbits(63))
    start = time.monotonic()
    notes = {}
    files = None
    if args.submission:
        try:
            files, ignored = submission.read(args.submission, [f for f, _ in labs.all_labs()])
        except submission.Rejected as e:
            return reports.rejected(str(e), args.submission)
        if ignored:
            notes["_ignored"] = ignored
    spent = {"tests_s": 0.0}
    with trees.Workspace(keep=args.keep) as ws:
        ws.configure(selected)
        wall = {"configure": time.monotonic() - start}
        phases.say("grade", f"the trusted tree of {len(selected)} lab(s) configured ({wall['configure']:.1f} s)")
        built = ws.build_trusted_labs([name for _, name in selected])
        for name, (ok, output) in built.items():
            if not ok:
                raise GraderError(f"the reference of {name} does not build (the instructor's tree):\n"
                                  + labs.compiler_messages(output))
        wall["trusted build"] = time.monotonic() - start - wall["configure"]
        phases.say("grade", f"the trusted tree built ({wall['trusted build']:.1f} s)")
        # Every lab built first, then the tests (testplan.py): correctness
        # tests side by side, timed tests alone.
        graded = [LabGrade(ws, folder, name, student_source(folder, files, notes), notes.get(folder, ""),
                           defaults, lab_rubrics.get(name, {}), args, seed, spent, phases)
                  for folder, name in selected]
        began = time.monotonic()
        pool.run(graded, range(args.jobs), lambda lab, slot: lab.build())
        wall["student builds"] = time.monotonic() - began
        phases.say("grade", f"the submission's {len(graded)} lab(s) built ({wall['student builds']:.1f} s)")
        wall.update(testplan.run([(lab, lab.tests_to_run()) for lab in graded], args.jobs,
                                 lambda lab, test: lab.run_test(test)))
        results = [lab.finish() for lab in graded]
    report = reports.make(results, time.monotonic() - start, args.submission or "labs/",
                          notes.get("_ignored", []), sandbox.note())
    report["seed"] = seed
    # The wall-clock seconds of the grade's parts; each lab's phases are in its entry.
    report["phases_s"] = {part: round(seconds, 1) for part, seconds in wall.items()}
    report["jobs"] = args.jobs
    return report


EXIT_STATUSES = """exit status: 0 graded, whatever the score (a rejected submission is graded: 0
points, and says why); 1 the grader could not grade (the instructor's tree does
not build, the rubric does not load, the grade was stopped, the grader raised):
every report asked for is still written and says so; 2 a mistake in the command
line (an unknown lab, an unknown option): nothing is graded."""


def grade(args):
    unknown = [name for name in args.lab or [] if labs.find_lab(name) is None]
    if unknown:
        print(f"error: unknown lab {', '.join(unknown)}; the labs are: "
              + ", ".join(name for _, name in labs.all_labs()), file=sys.stderr)
        return 2
    if args.jobs < 1:
        print(f"error: --jobs {args.jobs}: at least 1", file=sys.stderr)
        return 2
    phases = Phases([name for _, name in (map(labs.find_lab, args.lab) if args.lab else labs.all_labs())])
    # Stopped by a batch, Slurm or Ctrl-C: leave through the normal exits, so
    # that the workspace is removed and every report is still written, with
    # what was done before.
    stopped = []

    def stop(number, frame):
        stopped.append(signal.Signals(number).name)
        phases.finish()      # what they did after this is not done
        sandbox.stop_all()   # the tests running on other threads (--jobs) end too
        sys.exit(f"stopped by {stopped[0]}")
    handlers = {number: signal.signal(number, stop) for number in (signal.SIGTERM, signal.SIGINT)}
    # Whatever goes wrong, every report asked for is written and says so.
    try:
        report = grade_submission(args, phases)
    except SystemExit as e:   # a sys.exit with a message (the instructor's tree, a signal)
        done = f"; done before it stopped: {phases.what_was_done()}" if stopped else ""
        report = reports.failed(f"{e.code}{done}", args.submission or "labs/")
    except rubric.RubricError as e:
        report = reports.failed(f"error: {e}", args.submission or "labs/")
    except Exception as e:
        traceback.print_exc()
        report = reports.failed(f"{type(e).__name__}: {e}", args.submission or "labs/")
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
    phases.finish()
    reports.print_scoreboard(report)
    reports.write_all(report, args)
    return 1 if report["rejected"].startswith(reports.FAILED) else 0


def add_grade_options(g):
    g.add_argument("--lab", action="append", help="only this lab (repeatable)")
    g.add_argument("--submission", metavar="PATH",
                   help="grade this directory (mirroring labs/), .zip or .tar.gz instead of labs/")
    g.add_argument("--rubric", default=rubric.DEFAULT, help="rubric file (default grading/rubric.toml)")
    g.add_argument("--gradescope", metavar="FILE", help="write a Gradescope results.json")
    g.add_argument("--junit", metavar="FILE", help="write a JUnit XML report")
    g.add_argument("--json", metavar="FILE", help="write the full report as JSON")
    g.add_argument("--csv", metavar="FILE", help="append one CSV row per submission")
    g.add_argument("--sanitize", action="store_true",
                   help="also run passing tests under compute-sanitizer (memcheck, racecheck, synccheck, initcheck)")
    g.add_argument("--jobs", type=int, default=pool.default_jobs(), metavar="N",
                   help="builds and correctness tests at a time (default: the CPU cores, at most "
                        f"{pool.MAX_JOBS}; here {pool.default_jobs()}); timed tests always run alone, "
                        "after the others; 1: one at a time")
    g.add_argument("--keep", action="store_true", help="keep the temporary build directory")
    g.add_argument("--seed", help="the inputs' seed (default: a fresh random one, printed in the "
                   "report so that a failure replays with WB_SEED=...)")


def add_commands(sub):
    g = sub.add_parser("grade", help="build and test the student files (default: this checkout's labs/)",
                       description="Grades one submission (default: this checkout's labs/); says "
                       "on stderr what it has done as it goes (one line per lab and phase).",
                       epilog=EXIT_STATUSES)
    add_grade_options(g)
    g.set_defaults(func=grade)
    from . import batch
    batch.add_commands(sub)
