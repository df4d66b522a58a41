"""One lab's grade, in the steps that grade.py runs for every lab: build
(its tests listed, its result begun, the student's compile, check and
link), each test (recorded and judged, then sanitized), and its score.
The builds of different labs, and the tests of one lab or several, run at
the same time on different threads (testplan.py): what a lab's tests share
(its result's counts) is behind the lab's lock, the submission's test time
behind SPENT_LOCK."""
import os
import shutil
import threading
import time

from . import devicecode
from . import judge
from . import rubric
from . import sanitizing
from . import trees

# spent["tests_s"]: the seconds the submission's test runs and their judging
# took so far, over all its labs (the rubric's submission_wall_s).
SPENT_LOCK = threading.Lock()


class LabGrade:
    def __init__(self, ws, folder, name, source, note, defaults, lab_rubric, args, seed, spent, phases):
        self.ws, self.folder, self.name, self.source = ws, folder, name, source
        self.defaults, self.lab_rubric, self.seed = defaults, lab_rubric, seed
        self.spent, self.phases = spent, phases
        self.result = {"lab": name, "folder": folder, "build": "ok", "message": note,
                       "tests": [], "score": 0.0, "max_score": 0.0, "gpu_ran": True, "perf": None,
                       "launches": 0}
        self.perf = lab_rubric.get("performance") if defaults.get("run_timing", True) else None
        # Without compute-sanitizer, --sanitize checks nothing, says so and costs nothing.
        self.sanitize = args.sanitize and shutil.which("compute-sanitizer")
        if args.sanitize and not self.sanitize:
            self.result["message"] = "; ".join(filter(None, [note, "compute-sanitizer is not "
                                                             "installed here: --sanitize checked nothing"]))
        self.lock = threading.Lock()
        self.timeouts, self.stuck_tools, self.timings = {}, set(), {}
        self.binaries = None
        self.reference_bin = os.path.join(ws.build, f"{name}-reference")

    def tests_to_run(self):
        """The names of the tests to run, in the lab's order: none when the
        student's build failed."""
        return [t["test"] for t in self.result["tests"]] if self.binaries else []

    # ------------------------------------------------------------ build
    def build(self):
        """The lab's tests listed (from its reference, built in the trusted
        tree), then the student's build; its phase line says how it went."""
        began = time.monotonic()
        name, result = self.name, self.result
        self.phases.begin_lab(name)
        hidden = set(self.lab_rubric.get("hidden", []))
        tests = judge.list_tests(self.reference_bin)
        if not self.defaults.get("run_timing", True):
            tests = [(suite, test) for suite, test in tests if not rubric.timed(test)]
        for suite, test in tests:
            result["tests"].append({"name": f"{name}/{test}", "test": test, "suite": suite, "score": 0.0,
                                    "max_score": rubric.test_points(self.defaults, self.lab_rubric, test),
                                    "status": "failed", "output": "",
                                    "visibility": "after_due_date" if test in hidden else "visible"})
        if self.perf:
            result["max_score"] += float(self.perf["points"])
        result["max_score"] += sum(t["max_score"] for t in result["tests"])
        self.phases.expect_tests(name, [test for _, test in tests])

        build, message, binaries = trees.build_student(self.ws, self.folder, name, self.source, hidden)
        if build != "ok":
            self.phases.built(name, build, time.monotonic() - began)
            result.update(build=build, message=message, gpu_ran=False)   # no test ran at all
            for t in result["tests"]:
                t["output"] = "not run: the lab " + message if build == "failed" else "not run: " + message
            return
        _, reference_obj = self.ws.kernels_command(self.folder, name, side="reference")
        result["kernels"] = devicecode.lab_kernels(
            binaries["object"], os.path.join(self.ws.build, reference_obj),
            os.path.join(self.ws.src, "labs", self.folder, "given.cuh"))
        self.binaries = binaries
        self.phases.built(name, build, time.monotonic() - began)

    # ------------------------------------------------------------- tests
    def run_test(self, test):
        """One test: not run (rubric.not_run_reason), or recorded and
        judged, then, when it passed, sanitized with --sanitize."""
        t = next(entry for entry in self.result["tests"] if entry["test"] == test)
        name, folder, ws = self.name, self.folder, self.ws
        with SPENT_LOCK:
            skip = rubric.not_run_reason(self.defaults, test, self.timeouts, self.spent["tests_s"])
        if skip:
            t.update(status="failed", output=skip)
            self.phases.test_done(name, test)
            return
        lim = rubric.limits_for(self.defaults, test)
        binary = self.binaries["hidden" if t["visibility"] != "visible" else "visible"]
        got = judge.run_test(binary, self.reference_bin, t["suite"], test, lim, self.seed,
                             ws.data_dirs(folder), ws.rule_source(folder))
        with SPENT_LOCK:
            self.spent["tests_s"] += got["seconds"] + got["judge_seconds"]
        if got["timed_out"]:
            # Only this stage's worker counts its time-outs (testplan.py).
            stage = rubric.stage_of(test)
            self.timeouts[stage] = self.timeouts.get(stage, 0) + 1
        if got["status"] == "skipped":
            # The judge skipped the test: without a usable GPU, or a test of
            # the lab skipped itself (its reason says why).
            with self.lock:
                self.result["gpu_ran"] = self.result["gpu_ran"] and "GPU test skipped" not in got["reason"]
            t.update(status="failed", output="not run: " + got["reason"], skipped=got["reason"])
            self.phases.test_done(name, test, got)
            return
        t["seconds"] = got["seconds"]
        with self.lock:
            self.result["launches"] += got["launches"]
        text = "passed" if got["status"] == "passed" else f"FAILED: {got['reason']}"
        if got["status"] == "passed":
            t.update(status="passed", score=t["max_score"])
            if self.sanitize and not rubric.timed(test):   # timing tests repeat stage work
                text += self.sanitized(t, binary, lim)
        # Hidden tests show the verdict only, not what the student's code printed.
        shown = "" if t["visibility"] != "visible" else got["output"][-3000:]
        t["output"] = text + ("\n\nwhat your code's test process printed:\n" + shown if shown else "")
        if self.perf and test == self.perf["test"]:
            self.timings = {"rows": got["timings"], "clock": got["clock"]}
        self.phases.test_done(name, test, got)

    def sanitized(self, t, binary, lim):
        """--sanitize on a passing test: its findings, each costing
        sanitize_penalty of its points; the text to add to its output."""
        began = time.monotonic()
        findings = t["sanitizer"] = sanitizing.sanitize(
            binary, self.reference_bin, t, lim, self.seed, self.ws.data_dirs(self.folder),
            self.ws.rule_source(self.folder), rubric.sanitizer_tools(self.lab_rubric, t["test"]),
            self.stuck_tools)
        self.phases.add(self.name, "sanitize", time.monotonic() - began)
        if not findings:
            return ""
        t["score"] = max(0.0, t["score"] * (1 - self.defaults["sanitize_penalty"] * len(findings)))
        return "\nsanitizer: " + "; ".join(findings)

    # ------------------------------------------------------------- score
    def finish(self):
        """The lab's score, once every test ran: prerequisites, GPU work,
        performance. Returns its result."""
        result, lab_rubric = self.result, self.lab_rubric
        if self.binaries:   # built: its tests ran
            rubric.apply_prerequisites(result["tests"], lab_rubric)
            if rubric.gpu_work_missing(self.defaults, lab_rubric, result):
                result["message"] = (result["message"] + "; " if result["message"] else "") + \
                    "no GPU work: " + result["gpu_work"]
            if self.perf:
                result["perf"] = rubric.score_performance(self.perf, result["tests"], self.timings)
        result["score"] = sum(t["score"] for t in result["tests"]) + (result["perf"] or {}).get("score", 0.0)
        self.phases.end_lab(self.name, result)
        return result
