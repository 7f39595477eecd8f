from __future__ import annotations

from django.urls import path

from dashboard import sandbox_views, views

app_name = "dashboard"

urlpatterns = [
    path("", views.dashboard_index, name="index"),
    path("conversations/<int:conversation_id>/", views.conversation_seen, name="conversation"),
    path(
        "conversations/<int:conversation_id>/summarize/",
        views.conversation_summarize,
        name="conversation_summarize",
    ),
    path("sandbox/", sandbox_views.sandbox_chat, name="sandbox"),
    path("sandbox/send/", sandbox_views.sandbox_send, name="sandbox_send"),
    path("sandbox/react/", sandbox_views.sandbox_react_view, name="sandbox_react"),
    path("sandbox/photos/<str:name>", sandbox_views.sandbox_photo, name="sandbox_photo"),
]
