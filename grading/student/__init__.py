"""The student's commands: status, watch, hint, run, sanitize and reset
(commands.py lists its modules). It imports shared/, never grader/: the
student copy (`grading/workbook release`) ships this package and shared/
without the grader."""
