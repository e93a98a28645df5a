#!/usr/bin/env python
"""Django's command-line entry point."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    if sys.argv[1:2] == ["diagnose"]:  # answered without starting Django when it can be (kb/cli.py)
        from kb.cli import fast_main

        code = fast_main(sys.argv[2:])
        if code is not None:
            sys.exit(code)
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
