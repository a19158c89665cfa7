"""Console sign-in through a real OpenID Connect provider in headless Chromium (the `oidc`
scenario of browse.py; tests/it/console_browser/oidc.rs starts the provider,
tests/oidc/provider.mjs, and rummy).

Environment: RUMMY_CONSOLE (the console's URL), PROVIDER (the provider's name on the page).
ada (group rummy-admins) signs in through the provider's own login page and is an admin,
sees her sign-in in the admin audit, and signs out; the callback she came back through,
opened again, is refused (a replayed state); bo (no mapped group) is told to ask an admin; mo (web-team) is a member.
"""

import os
from playwright.sync_api import expect

URL = os.environ["RUMMY_CONSOLE"]
PROVIDER = os.environ.get("PROVIDER", "")
WAIT_MS = 30000


def through_provider(page, login):
    """From the console's sign-in page through the provider's login page as `login`."""
    page.goto(URL)
    page.get_by_role("button", name=f"Sign in with {PROVIDER}").click()
    try:
        page.wait_for_url("**/interaction/**", timeout=WAIT_MS)
    except Exception:
        raise AssertionError(f"not the provider's login page: {page.url}: {page.inner_text('body')[:500]}")
    login_field = page.locator("input[name=login]")
    login_field.fill(login)
    page.locator("input[name=password]").fill("any password")
    page.locator("button[type=submit]").click()


def oidc_sign_in(browser, seen):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.on("pageerror", lambda error: seen["errors"].append(str(error)))
    callbacks = []
    page.on("request", lambda request: callbacks.append(request.url) if "/oidc/callback" in request.url else None)

    through_provider(page, "ada")
    expect(page.get_by_role("heading", name="Projects")).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#who")).to_have_text("ada (admin)")
    page.get_by_role("link", name="Admin").click()
    expect(page.get_by_role("cell", name="console/signIn", exact=True).first).to_be_visible(timeout=WAIT_MS)
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_text("Signed out.")).to_be_visible()
    expect(page.get_by_role("button", name=f"Sign in with {PROVIDER}")).to_be_visible()
    page.reload()
    expect(page.get_by_role("button", name=f"Sign in with {PROVIDER}")).to_be_visible()

    assert len(callbacks) == 1, callbacks
    page.goto(callbacks[0])
    expect(page.locator("#refusal")).to_contain_text("used already")

    page.get_by_role("link", name="Back to the sign-in page").click()
    expect(page.get_by_role("button", name=f"Sign in with {PROVIDER}")).to_be_visible()
    context.close()

    context = browser.new_context()
    page = context.new_page()
    page.on("pageerror", lambda error: seen["errors"].append(str(error)))
    through_provider(page, "bo")
    expect(page.locator("#refusal")).to_contain_text("none of your groups gives you access to this server: ask an admin", timeout=WAIT_MS)
    page.screenshot(path=os.path.join(os.environ["SHOTS"], "oidc-ask-an-admin.png"))
    page.goto(URL)
    expect(page.get_by_role("button", name=f"Sign in with {PROVIDER}")).to_be_visible()
    context.close()

    context = browser.new_context()
    page = context.new_page()
    page.on("pageerror", lambda error: seen["errors"].append(str(error)))
    through_provider(page, "mo")
    expect(page.get_by_role("heading", name="Projects")).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#who")).to_have_text("mo (member)")
    expect(page.get_by_role("link", name="Admin")).to_have_count(0)
    context.close()
