from django.urls import path, re_path

from kb import api, report_views, views

app_name = "kb"

urlpatterns = [
    path("", views.home, name="home"),
    path("search", views.search, name="search"),
    path("diagnose", views.diagnose, name="diagnose"),
    path("kb/", views.case_list, name="case_list"),
    path("kb/harmless/", views.harmless_list, name="harmless_list"),
    path("kb/<str:slug>/", views.case_detail, name="case_detail"),
    path("api/cases/<str:slug>.json", api.case_json, name="case_json"),
    path("d/", report_views.report_create, name="report_create"),
    re_path(r"^d/(?P<report_id>[A-Za-z0-9_-]{16,64})$", report_views.report_detail, name="report"),
    re_path(r"^d/(?P<report_id>[A-Za-z0-9_-]{16,64})\.md$", report_views.report_markdown, name="report_markdown"),
    re_path(r"^d/(?P<report_id>[A-Za-z0-9_-]{16,64})/log\.txt$", report_views.report_log, name="report_log"),
    re_path(r"^d/(?P<report_id>[A-Za-z0-9_-]{16,64})/log$", report_views.report_log_page, name="report_log_page"),
    re_path(r"^d/(?P<report_id>[A-Za-z0-9_-]{16,64})/delete$", report_views.report_delete, name="report_delete"),
    path("vote", report_views.vote, name="vote"),
    path("curate/", report_views.curate, name="curate"),
    path("curate/<int:cluster_id>", report_views.curate_cluster, name="curate_cluster"),
    path("api/diagnose", api.diagnose, name="api_diagnose"),
    path("api/search", api.search, name="api_search"),
]
