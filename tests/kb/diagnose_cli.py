"""Run the `diagnose` command as a user would and read its JSON."""

import io
import json

from django.core.management import call_command


def diagnose_json(*args: str) -> dict:
    out = io.StringIO()
    call_command("diagnose", *args, "--json", stdout=out)
    return json.loads(out.getvalue())
