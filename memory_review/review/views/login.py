"""What a person sees when django-axes refuses a login (AXES_LOCKOUT_CALLABLE)."""

from django.conf import settings
from django.shortcuts import render


def locked_out(request, original_response, credentials):
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    response = render(
        request,
        "registration/locked_out.html",
        {"failure_limit": settings.AXES_FAILURE_LIMIT, "minutes": minutes},
        status=429,
    )
    response["Retry-After"] = str(minutes * 60)
    return response
