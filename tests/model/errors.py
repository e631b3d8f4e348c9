# SPDX-License-Identifier: MIT
"""errors.py - what a model raises where the C code returns an errno:
Edom for -EDOM (a value or a scale that is not finite), Refused for
-EBADMSG (a malformed stream, nothing decoded)."""


class Edom(ValueError):
    pass


class Refused(ValueError):
    pass
