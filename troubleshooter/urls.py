from django.urls import path

from troubleshooter import views

app_name = "troubleshooter"

urlpatterns = [
    path("", views.index, name="index"),
    path("<slug:tree_id>/", views.step, name="step"),
    path("<slug:tree_id>/fix.sh", views.script, name="script"),
]
