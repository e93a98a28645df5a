from django.urls import path

from kb import api, views

app_name = "kb"

urlpatterns = [
    path("", views.home, name="home"),
    path("search", views.search, name="search"),
    path("diagnose", views.diagnose, name="diagnose"),
    path("kb/", views.case_list, name="case_list"),
    path("kb/harmless/", views.harmless_list, name="harmless_list"),
    path("kb/<str:slug>/", views.case_detail, name="case_detail"),
    path("api/cases/<str:slug>.json", api.case_json, name="case_json"),
    path("api/diagnose", api.diagnose, name="api_diagnose"),
    path("api/search", api.search, name="api_search"),
]
