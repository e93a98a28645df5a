"""Top-level URL map: the knowledge base, the troubleshooter and the admin; any other address gets the site's
own 404 page, with DEBUG on as well as off (see kb.views.unknown_address)."""

from django.contrib import admin
from django.urls import include, path, re_path

from config import health
from kb import views

urlpatterns = [
    path("", include("kb.urls")),
    path("troubleshoot/", include("troubleshooter.urls")),
    path("admin/", admin.site.urls),
    path("healthz", health.healthz, name="healthz"),  # for load balancers (README, "Production")
    # Browsers that ignore <link rel="icon"> ask for /favicon.ico; the icon is an SVG under static/.
    path("favicon.ico", views.favicon),
    re_path(r"^(?P<path>.*)$", views.unknown_address),  # last: every address no pattern above takes
]

handler404 = "kb.views.not_found"
handler400 = "kb.views.bad_request"
handler500 = "kb.views.server_error"
