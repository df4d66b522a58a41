"""The text progress bar that the student's `status` and the grader's
progress lines (a grade's labs, a batch's submissions) both draw."""


def progress_bar(done, total, width=30, unit="stages"):
    filled = round(width * done / total) if total else 0
    return "[" + "#" * filled + "-" * (width - filled) + f"] {done}/{total} {unit}"
