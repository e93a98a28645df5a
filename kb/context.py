"""Template context shared by every page."""
from django.http import HttpRequest

SITE_NAME = "Hang Doctor"


def site(request: HttpRequest) -> dict:
    return {"site_name": SITE_NAME}
