from __future__ import annotations

from django.urls import path

from dashboard import console_views, conversation_views, sandbox_views, search_views, views

app_name = "dashboard"

urlpatterns = [
    path("", views.dashboard_index, name="index"),
    path("conversations/<int:conversation_id>/", views.conversation_seen, name="conversation"),
    path(
        "conversations/<int:conversation_id>/search/",
        search_views.conversation_search,
        name="conversation_search",
    ),
    path("agents/<int:agent_id>/", search_views.agent_page, name="agent"),
    path(
        "conversations/<int:conversation_id>/summarize/",
        views.conversation_summarize,
        name="conversation_summarize",
    ),
    path(
        "conversations/<int:conversation_id>/log/",
        conversation_views.conversation_log,
        name="conversation_log",
    ),
    path(
        "conversations/<int:conversation_id>/translations/",
        conversation_views.conversation_translations,
        name="conversation_translations",
    ),
    path(
        "conversations/<int:conversation_id>/translate/",
        conversation_views.conversation_translate,
        name="conversation_translate",
    ),
    path(
        "conversations/<int:conversation_id>/print/",
        conversation_views.conversation_print,
        name="conversation_print",
    ),
    path(
        "conversations/<int:conversation_id>/download.<str:fmt>",
        conversation_views.conversation_download,
        name="conversation_download",
    ),
    path(
        "conversations/<int:conversation_id>/gag/",
        conversation_views.conversation_gag_view,
        name="conversation_gag",
    ),
    path(
        "conversations/<int:conversation_id>/llm/",
        conversation_views.conversation_llm_view,
        name="conversation_llm",
    ),
    path(
        "conversations/<int:conversation_id>/cancel/",
        conversation_views.conversation_work_cancel,
        name="conversation_cancel",
    ),
    path(
        "conversations/<int:conversation_id>/media/<int:message_id>/<str:unique_id>/save/",
        conversation_views.conversation_media_save_view,
        name="conversation_media_save",
    ),
    path(
        "agents/<int:agent_id>/cancel-work/", conversation_views.agent_work_delete, name="agent_work_delete"
    ),
    path("users/", console_views.users_index, name="users"),
    path("users/<int:peer_id>/", console_views.user_detail, name="user"),
    path("sandbox/", sandbox_views.sandbox_chat, name="sandbox"),
    path("sandbox/send/", sandbox_views.sandbox_send, name="sandbox_send"),
    path("sandbox/react/", sandbox_views.sandbox_react_view, name="sandbox_react"),
    path("sandbox/mark-unread/", sandbox_views.sandbox_mark_unread_view, name="sandbox_mark_unread"),
    path("sandbox/typing/", sandbox_views.sandbox_typing_view, name="sandbox_typing"),
    path("sandbox/photos/<str:name>", sandbox_views.sandbox_photo, name="sandbox_photo"),
    path("sandbox/voice/<str:name>", sandbox_views.sandbox_voice, name="sandbox_voice"),
]
