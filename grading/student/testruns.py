"""The student's test runs (`status --run`, `watch`): build a lab's tests,
run them, keep their results in build/results/<lab>-<side>/ (the Criterion
JSON report and the timing CSVs, as the grader writes them), and tell when
those results are still current (the same test binary, every test run), so
that an unchanged lab is not run again."""
import shutil
from pathlib import Path

from shared import criterion
from shared import includes
from shared import labs
from . import builddir
from .ui import Style

RESULTS = Path(labs.BUILD) / "results"


def load_report(name, side):
    try:
        return criterion.load_report(RESULTS / f"{name}-{side}" / "criterion.json")
    except (OSError, ValueError):
        return None


def run_lab_tests(name):
    """Builds and runs one lab's student tests; returns (built, report, output)."""
    ok, output = labs.build_target(f"{name}-student")
    if not ok:
        return False, None, output
    return (True, *test_lab(name))


def test_lab(name):
    """Runs one lab's built student tests; returns (report, output)."""
    binary, results = Path(labs.BUILD) / f"{name}-student", RESULTS / f"{name}-student"
    report, output = criterion.run(str(binary), str(results))
    if report is not None:
        (results / STAMP).write_text(binary_stamp(binary))
    return report, output


# The student test binary a lab's results came from: when it has not changed
# (nothing the tests build from was edited) and every test ran, running them
# again would only repeat the same verdicts (on a GPU, a minute or more for
# all the skeletons, whose hangs wait for their timeouts).
STAMP = "binary.stamp"


def binary_stamp(binary):
    info = binary.stat()
    return f"{info.st_size} {info.st_mtime_ns}\n"


def results_still_current(name):
    results = RESULTS / f"{name}-student"
    try:
        stamp = (results / STAMP).read_text()
    except OSError:
        return False
    report = load_report(name, "student")
    ran_all = report is not None and all(t["status"] != "SKIPPED"
                                         for t in criterion.all_tests(report))
    return ran_all and stamp == binary_stamp(Path(labs.BUILD) / f"{name}-student")


def build_and_test(names, rerun=False):
    """status --run: builds the labs' tests in one go, then runs them; returns
    {lab: its build's output} of those that do not compile (status shows
    the messages last, where nothing scrolls them away). Their old results are
    removed, so that status cannot show a result of code that is no longer
    there. A lab whose test binary is the one its results came from is not
    run again unless rerun is set."""
    problem = builddir.arch_problem()
    if problem:
        print(Style.yellow(problem))
    for name in names:
        folder = labs.find_lab(name)[0]
        refused = includes.source_problems(labs.ROOT, folder)
        if refused:
            print(Style.yellow(f"labs/{folder}/kernels.cu: the grader will refuse it as it is "
                               "(it compiles it with the same checks):"))
            print("\n".join("  " + line for line in refused))
    print(Style.dim(f"Building {', '.join(names)} ..."), flush=True)
    broken = builddir.build_tests(names)
    reused = []
    for name in names:
        if name in broken:
            shutil.rmtree(RESULTS / f"{name}-student", ignore_errors=True)
        elif not rerun and results_still_current(name):
            reused.append(name)
        else:
            test_lab(name)
    if reused:
        print(Style.dim(f"Not run again, nothing changed since their last run: {', '.join(reused)} "
                        "(--rerun runs them anyway)."))
    return broken
