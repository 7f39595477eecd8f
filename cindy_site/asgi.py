"""ASGI entry point: HTTP through Django, WebSockets through Channels.

Sockets must come from this site's own pages (SameOriginValidator: the Origin has the site's own
scheme, host and port, the Host being in ALLOWED_HOSTS, or is one of CSRF_TRUSTED_ORIGINS) and carry
the session user
(AuthMiddlewareStack); each consumer then checks staff and OTP itself, at connect and while it runs.
Every HTTP request goes through `BodySizeLimit` first: a body past CINDY_MAX_REQUEST_BODY_BYTES is
answered 413 before anything reads it. A setting that stops startup is printed in one line
(`cindy_site/startup.py`).
"""

from __future__ import annotations

from django.core.asgi import get_asgi_application

from cindy_site.startup import dump_stacks_on_signal, settings_or_exit

dump_stacks_on_signal()  # under daphne too: `kill -USR1 PID` writes the web process's thread stacks
settings_or_exit()  # sets DJANGO_SETTINGS_MODULE when unset, then loads the settings
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from cindy_site.body_limit import BodySizeLimit  # noqa: E402
from dashboard.origin import SameOriginValidator  # noqa: E402
from dashboard.routing import websocket_urlpatterns  # noqa: E402

application = BodySizeLimit(
    ProtocolTypeRouter(
        {
            "http": django_asgi_app,
            "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
        }
    )
)
