from django.urls import path

from . import views

urlpatterns = [
    path("openapi.json", views.openapi, name="api-openapi"),
    path("t/<slug:slug>/events", views.events, name="api-events"),
    path("t/<slug:slug>/events/batch", views.events_batch, name="api-events-batch"),
    path("t/<slug:slug>/memories", views.memories, name="api-memories"),
    path("t/<slug:slug>/changes", views.changes, name="api-changes"),
    path("t/<slug:slug>/receipts", views.receipts, name="api-receipts"),
    path("t/<slug:slug>/webhooks", views.webhook_list, name="api-webhooks"),
    path("t/<slug:slug>/webhooks/<id:pk>", views.webhook_detail, name="api-webhook"),
    path(
        "t/<slug:slug>/webhooks/<id:pk>/deliveries/<id:delivery>/redeliver",
        views.webhook_redeliver,
        name="api-webhook-redeliver",
    ),
    path("t/<slug:slug>/candidates", views.candidates, name="api-candidates"),
    path("t/<slug:slug>/assessments/<id:pk>", views.assessment_detail, name="api-assessment"),
]
