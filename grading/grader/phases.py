"""What a grade says as it goes, on stderr: one line per lab and phase with
the time since the grade began, a progress bar on a terminal, the seconds
of each phase per lab (for the reports), and what was done when a grade is
stopped.

The phases of a lab: build (the student's compile, check and link; the
trusted tree is built once for all labs before, on a line of its own),
tests (the correctness tests' record runs), judge (the reference judging
those recordings), sanitize (--sanitize's runs), timing (the timed tests,
recorded and judged). Labs are built side by side and their correctness
tests run side by side (testplan.py), so the lines of several labs mix: a
lab's tests, judge and sanitize lines come once its correctness tests are
all done, its timing line once its timed tests are, then its "done" line.
The seconds of a phase are those of its processes added up (with tests
side by side, more than the wall-clock time they took). On a terminal the
bar counts the tests done of all labs meanwhile. Every method may be called
from any thread."""
import sys
import threading
import time

from shared.progressbar import progress_bar
from . import rubric

PHASES = ("build", "tests", "judge", "sanitize", "timing")


class Phases:
    def __init__(self, lab_names, stream=sys.stderr):
        self.start = time.monotonic()
        self.names = list(lab_names)
        self.stream = stream
        self.tty = stream.isatty()
        self.lock = threading.RLock()
        self.times = {}       # lab: {phase: seconds}
        self.said = {}        # lab: ["build ok 3.1 s", ...], what the lines said
        self.tests = {}       # lab: [tests done, tests in all, passed, did not run]
        self.timed = {}       # lab: how many of its tests are timed
        self.finished = False

    # ------------------------------------------------------------ output
    def say(self, lab, text):
        """One line "[ elapsed] lab: text", above the bar on a terminal."""
        with self.lock:
            if self.finished:   # a test still running when the grade was stopped
                return
            self.said.setdefault(lab, []).append(text)
            elapsed = time.monotonic() - self.start
            self.stream.write(("\r\033[K" if self.tty else "") + f"[{elapsed:6.1f} s] {lab}: {text}\n")
            self.draw()

    def draw(self):
        """The bar (tests done of all labs' tests) and the labs being built
        or the labs done: terminal only."""
        if not self.tty or self.finished or not self.times:
            return
        done = sum(counts[0] for counts in self.tests.values())
        count = sum(counts[1] for counts in self.tests.values())
        building = [lab for lab in self.times if "build" not in self.times[lab]]
        ended = sum(self.ended(lab) for lab in self.names)
        doing = f"building {', '.join(building)}" if building else f"{ended}/{len(self.names)} labs done"
        self.stream.write(f"\r\033[K{progress_bar(done, count, width=20, unit='tests')}  {doing}")
        self.stream.flush()

    def ended(self, lab):
        return any(line.startswith("done") for line in self.said.get(lab, []))

    # ---------------------------------------------------------- phases
    def begin_lab(self, lab):
        with self.lock:
            self.times[lab] = {}
            self.tests[lab] = [0, 0, 0, 0]
            self.draw()

    def expect_tests(self, lab, names):
        """The names of the lab's tests (rubric.timed tells the timed ones)."""
        with self.lock:
            self.tests[lab][1] = len(names)
            self.timed[lab] = sum(rubric.timed(name) for name in names)

    def add(self, lab, phase, seconds):
        with self.lock:
            if self.finished:
                return
            self.times[lab][phase] = self.times[lab].get(phase, 0.0) + seconds

    def built(self, lab, status, seconds):
        self.add(lab, "build", seconds)
        self.say(lab, f"build {status} ({seconds:.1f} s)")

    def test_done(self, lab, test, got=None):
        """A test's record and judge runs (judge.run_test's result, None
        for a test not run) are over, and its sanitizer runs."""
        with self.lock:
            if self.finished:   # what ends after a stop is not done
                return
            if got is not None and rubric.timed(test):
                self.add(lab, "timing", got["seconds"] + got["judge_seconds"])
            elif got is not None:
                self.add(lab, "tests", got["seconds"])
                self.add(lab, "judge", got["judge_seconds"])
            counts = self.tests[lab]
            counts[0] += 1
            counts[2] += got is not None and got["status"] == "passed" and not rubric.timed(test)
            counts[3] += (got is None or got["status"] == "skipped") and not rubric.timed(test)
            if counts[0] == counts[1] - self.timed[lab]:
                self.correctness_said(lab)
            if counts[0] == counts[1] and self.timed[lab]:
                self.say(lab, f"timing ({self.times[lab].get('timing', 0):.1f} s)")
            self.draw()

    def correctness_said(self, lab):
        """The lines of a lab whose correctness tests are all done."""
        ran, count, passed, not_run = self.tests[lab]
        times = self.times[lab]
        self.say(lab, f"tests {passed}/{count - self.timed[lab]} passed"
                 + (f", {not_run} did not run" if not_run else "") + f" ({times.get('tests', 0):.1f} s)")
        self.say(lab, f"judge ({times.get('judge', 0):.1f} s)")
        if "sanitize" in times:
            self.say(lab, f"sanitize ({times['sanitize']:.1f} s)")

    def end_lab(self, lab, result):
        """The lab's last line; its phase times go into its result (the reports)."""
        with self.lock:
            times = self.times[lab]
            result["phases"] = {phase: round(times[phase], 1) for phase in PHASES if phase in times}
            self.say(lab, f"done: {result['score']:g}/{result['max_score']:g} points")

    # ----------------------------------------------------------- stopped
    def what_was_done(self):
        """A grade that was stopped: each lab's phases that finished, where
        it was, and the labs not started."""
        parts = []
        with self.lock:
            for lab in self.names:
                if lab not in self.times:
                    continue
                said = [s for s in self.said.get(lab, []) if not s.startswith("done")]
                ran, count = self.tests[lab][:2]
                if self.ended(lab):
                    where = []
                elif "build" not in self.times[lab]:
                    where = ["stopped while building"]
                else:
                    where = [f"stopped after {ran} of its {count} tests"]
                parts.append(f"{lab}: " + ", ".join(said + where))
            waiting = [lab for lab in self.names if lab not in self.times]
        if waiting:
            parts.append("not started: " + ", ".join(waiting))
        return "; ".join(parts) or "nothing was graded yet"

    def finish(self):
        """The grade is over, or stopped (what_was_done still says what was
        done before): the bar goes, nothing is counted or said after this."""
        with self.lock:
            if self.tty:
                self.stream.write("\r\033[K")
                self.stream.flush()
            self.finished = True
