"""Top-level URL map: the knowledge base, the troubleshooter and the admin."""
from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("", include("kb.urls")),
    path("troubleshoot/", include("troubleshooter.urls")),
    path("admin/", admin.site.urls),
]

handler404 = "kb.views.not_found"
handler400 = "kb.views.bad_request"
handler500 = "kb.views.server_error"
