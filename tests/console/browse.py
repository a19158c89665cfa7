"""The web console in headless Chromium, as people would use it (tests/it/console_browser.rs
starts rummy with the scripted model, makes the runs below and runs this).

Environment: RUMMY_CONSOLE (the console's URL), CHROMIUM (the browser's path), MO and VERA
(a member's and a viewer's token), HOSTILE_RUN (a run whose model reply is hostile HTML and
1 MB long), WAITING_RUN (a run with a proposal waiting), SHOTS (where screenshots go).
Exits 0 when every check held; otherwise the first that did not is the error.
"""

import json
import os
import re
import sys
from urllib.parse import urlsplit

from playwright.sync_api import expect, sync_playwright

URL = os.environ["RUMMY_CONSOLE"]
ORIGIN = "{0.scheme}://{0.netloc}".format(urlsplit(URL))
SHOTS = os.environ["SHOTS"]
HOSTILE = os.environ["HOSTILE_RUN"]
WAITING = os.environ["WAITING_RUN"]
os.makedirs(SHOTS, exist_ok=True)


def watch(page, seen):
    """Records every request the page makes and every console message about the policy."""
    page.on("request", lambda request: seen["requests"].append(request.url))
    page.on("console", lambda message: seen["console"].append(message.text))
    page.on("pageerror", lambda error: seen["errors"].append(str(error)))


def sign_in(page, token):
    page.goto(URL)
    page.get_by_label("Your token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Projects")).to_be_visible()


def every_control_is_labelled(page):
    unlabelled = page.evaluate(
        """() => [...document.querySelectorAll('input, select, textarea')]
             .filter((control) => control.labels.length === 0).map((control) => control.id)"""
    )
    assert unlabelled == [], f"controls without a label: {unlabelled}"


def member(browser, seen):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    watch(page, seen)

    page.goto(URL)
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    every_control_is_labelled(page)
    assert page.evaluate("() => document.activeElement.id") == "token", "the token field has focus"
    page.keyboard.type("not-a-token")
    page.keyboard.press("Tab")
    focused = page.evaluate("() => document.activeElement.textContent")
    assert focused == "Sign in", f"Tab reached {focused!r}"
    page.keyboard.press("Enter")
    expect(page.get_by_role("alert")).to_contain_text("opens nothing")
    page.screenshot(path=f"{SHOTS}/sign-in.png")

    sign_in(page, os.environ["MO"])
    expect(page.locator("#who")).to_have_text("mo (member)")
    expect(page.get_by_role("link", name="web")).to_be_visible()
    page.screenshot(path=f"{SHOTS}/projects.png")

    page.get_by_role("link", name="web").click()
    expect(page.get_by_role("heading", name="web")).to_be_visible()
    rows = page.locator("table.runs tbody tr")
    expect(rows).to_have_count(2)
    every_control_is_labelled(page)

    page.get_by_label("Ask a question").fill("What is 2 + 2?")
    page.get_by_role("button", name="Ask").click()
    expect(rows).to_have_count(3)
    newest = rows.first
    expect(newest).to_contain_text("running")
    expect(newest).to_contain_text("mo")
    expect(newest).to_contain_text("done (200)", timeout=20000)
    expect(newest).to_contain_text("four")

    page.get_by_label("Status").select_option("failed")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("No run matches")
    page.get_by_label("Status").select_option("all")
    page.get_by_label("Filter").fill(WAITING)
    expect(rows).to_have_count(1)
    page.get_by_label("Filter").fill("")
    expect(rows).to_have_count(3)
    page.screenshot(path=f"{SHOTS}/runs.png", full_page=True)

    page.set_viewport_size({"width": 390, "height": 844})
    overflow = page.evaluate("() => document.documentElement.scrollWidth")
    assert overflow <= 390, f"the page is {overflow} px wide at a phone's 390"
    page.screenshot(path=f"{SHOTS}/runs-phone.png", full_page=True)
    page.set_viewport_size({"width": 1200, "height": 900})

    newest.get_by_role("link").click()
    expect(page.get_by_role("heading", name="Timeline")).to_be_visible()
    timeline = page.locator("ol.timeline")
    expect(timeline).to_contain_text("What is 2 + 2?")
    expect(timeline).to_contain_text("four")
    expect(page.locator("main")).not_to_contain_text("null")
    page.screenshot(path=f"{SHOTS}/run.png", full_page=True)

    page.goto(f"{URL}#/p/web/r/{HOSTILE}")
    expect(page.get_by_role("heading", name="Timeline")).to_be_visible()
    main = page.locator("main")
    expect(main).to_contain_text("<script>")
    expect(main).to_contain_text("onerror")
    planted = page.evaluate(
        """() => ({
             scripts: document.querySelectorAll('main script').length,
             images: document.querySelectorAll('main img').length,
             links: [...document.querySelectorAll('main a')]
               .filter((a) => !a.getAttribute('href').startsWith('#/')).length,
             pwned: window.pwned === true,
             longest: Math.max(...[...document.querySelectorAll('main pre')]
               .map((pre) => pre.textContent.length)),
           })"""
    )
    assert planted["scripts"] == 0 and planted["images"] == 0, planted
    assert planted["links"] == 0 and not planted["pwned"], planted
    assert planted["longest"] >= 1_000_000, f"the 1 MB reply is shown whole: {planted}"
    assert page.evaluate("() => 1 + 1") == 2
    page.get_by_role("link", name="web").click()
    expect(page.get_by_role("heading", name="web")).to_be_visible(timeout=5000)

    page.goto(f"{URL}#/p/web/r/{WAITING}")
    expect(page.get_by_role("button", name="Approve")).to_be_visible()
    expect(page.get_by_role("button", name="Reject")).to_be_visible()

    page.emulate_media(color_scheme="dark")
    dark = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
    page.screenshot(path=f"{SHOTS}/run-dark.png", full_page=True)
    page.emulate_media(color_scheme="light")
    light = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
    assert dark != light, f"the theme follows the system: {dark} / {light}"

    cookie = next(c for c in context.cookies() if c["name"] == "rummy_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict", cookie
    assert page.evaluate("() => document.cookie") == "", "the cookie is out of the page's reach"

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    again = context.request.get(
        f"{URL}session", headers={"cookie": f"rummy_session={cookie['value']}"}
    )
    assert again.status == 401, f"the old cookie still opens a session: {again.status}"
    stale = browser.new_context()
    stale.add_cookies([{**cookie}])
    old = stale.new_page()
    old.goto(URL)
    expect(old.get_by_role("heading", name="Sign in")).to_be_visible()
    stale.close()
    context.close()


def viewer(browser, seen):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    watch(page, seen)
    sign_in(page, os.environ["VERA"])
    expect(page.locator("#who")).to_have_text("vera (viewer)")
    page.get_by_role("link", name="web").click()
    expect(page.locator("table.runs tbody tr")).to_have_count(3)
    assert page.locator("#prompt").count() == 0, "a viewer gets no prompt box"
    expect(page.locator("main")).not_to_contain_text("null")
    page.goto(f"{URL}#/p/web/r/{WAITING}")
    expect(page.get_by_role("heading", name="Timeline")).to_be_visible()
    expect(page.locator("ol.timeline")).to_contain_text("echo hello")
    for name in ("Approve", "Reject", "Abort"):
        assert page.get_by_role("button", name=name).count() == 0, f"a viewer sees {name}"
    page.screenshot(path=f"{SHOTS}/run-viewer.png", full_page=True)
    refused = page.evaluate(
        """(run) => new Promise((resolve) => {
             const socket = new WebSocket(new URL('rpc', location.href).href.replace(/^http/, 'ws'));
             const send = (id, method, params) =>
               socket.send(JSON.stringify({jsonrpc: '2.0', id, method, params}));
             socket.onopen = () => send(1, 'getProjects', {});
             socket.onmessage = (event) => {
               const reply = JSON.parse(event.data);
               if (reply.id === 1) {
                 send(2, 'init', {name: 'web', projectRoot: reply.result[0].projectRoot});
               } else if (reply.id === 2) {
                 send(3, 'run/resolve', {run, resolution: {path: 'sh://x', action: 'accept'}});
               } else if (reply.id === 3) resolve(reply.error?.code ?? null);
             };
           })""",
        WAITING,
    )
    assert refused == -32005, f"a viewer's forged resolve was answered {refused}"
    context.close()


def main():
    seen = {"requests": [], "console": [], "errors": []}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=os.environ["CHROMIUM"], headless=True, args=["--no-sandbox"]
        )
        member(browser, seen)
        viewer(browser, seen)
        browser.close()
    elsewhere = [url for url in seen["requests"] if not url.startswith(ORIGIN)]
    assert elsewhere == [], f"requests left the page's origin: {elsewhere}"
    policy = [text for text in seen["console"] if re.search("Content.Security.Policy", text)]
    assert policy == [], f"the page broke its own policy: {policy}"
    assert seen["errors"] == [], f"the page threw: {seen['errors']}"
    print(json.dumps({"requests": len(seen["requests"])}))


if __name__ == "__main__":
    try:
        main()
    except AssertionError as failure:
        print(f"console check failed: {failure}", file=sys.stderr)
        sys.exit(1)
