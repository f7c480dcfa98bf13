from django.urls import path

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("t/<slug:slug>/", views.tenant_home, name="tenant-home"),
    path("t/<slug:slug>/review/", views.review_queue, name="review-queue"),
    path("t/<slug:slug>/assessments/", views.assessment_list, name="assessment-list"),
    path("t/<slug:slug>/assessments/<int:pk>/", views.assessment_detail, name="assessment-detail"),
]
