"""The site's URLs with Google sign-in mounted, as cindy_site/urls.py has them when it is configured."""

from django.urls import include, path

from cindy_site.urls import urlpatterns as site_urlpatterns

urlpatterns = [*site_urlpatterns, path("accounts/", include("dashboard.signin_views"))]
