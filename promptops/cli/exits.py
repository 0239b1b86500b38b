"""Exit codes shared by every command (the review gate's among them).

0  success: accepted, clean, passed, or skipped
1  warnings present and ``--strict-warnings`` was given
2  the subject failed: a rejected response, an error finding, a failed or escalated gate
3  the tool could not do its job: bad flags, unreadable files, broken contracts, internal errors
"""

OK = 0
WARNINGS = 1
FAILED = 2
TOOL_FAILURE = 3
