"""
WSGI config for cindy_site project.

It exposes the WSGI callable as a module-level variable named ``application``.

For more information on this file, see
https://docs.djangoproject.com/en/5.2/howto/deployment/wsgi/
"""

from django.core.wsgi import get_wsgi_application

from cindy_site.startup import settings_or_exit

settings_or_exit()  # sets DJANGO_SETTINGS_MODULE when unset, then loads the settings

application = get_wsgi_application()
