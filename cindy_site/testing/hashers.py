"""The test process's password hasher: Django's PBKDF2-SHA256 at one iteration.

Django's default (PBKDF2-SHA256, 1,000,000 iterations) costs about 0.6 s of CPU per password hashed
or checked, slow by design; a test that creates staff and signs in paid it twice, and the suite paid
it on every such test. The hashes this one makes have the same algorithm name and state their
iteration count, so any Cindy process (a gateway, a live site) checks them with the default hasher.
Installed by the root conftest.py for the test process only; what is tested about passwords (their
checks, the sign-in) is unchanged, only the work factor is."""

from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class FastPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    iterations = 1
