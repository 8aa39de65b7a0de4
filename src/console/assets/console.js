// The console's only script (the Content-Security-Policy allows no other, and nothing inline).
// Live pages: when /ui/events says "changed", the page's main part is fetched again and put in
// place, unless the person is typing in one of its forms. Forms with data-confirm ask first.
(() => {
  const main = document.querySelector('main[data-live]');
  if (main && 'EventSource' in window) {
    // The stream watches what this page shows (a thread's page: that thread's lines), live-events.ts.
    const events = new EventSource(`/ui/events?live=${encodeURIComponent(main.dataset.live)}`);
    let busy = false;
    let again = false;
    const refresh = async () => {
      if (busy) {
        again = true;
        return;
      }
      const typing = document.activeElement && main.contains(document.activeElement) && document.activeElement.matches('input, textarea, select');
      if (typing) return;
      busy = true;
      try {
        const res = await fetch(location.href, { headers: { 'x-kiwi-fragment': '1' }, credentials: 'same-origin' });
        if (res.ok) main.innerHTML = await res.text();
        else if (res.status === 401 || res.redirected) location.reload();
      } finally {
        busy = false;
        if (again) {
          again = false;
          void refresh();
        }
      }
    };
    events.addEventListener('changed', () => void refresh());
    // What changed between rendering the page and the stream's first look would go unseen: look once now.
    events.addEventListener('ready', () => void refresh());
  }
  document.addEventListener('submit', (event) => {
    const form = event.target;
    const question = form instanceof HTMLFormElement ? form.dataset.confirm : undefined;
    if (question && !window.confirm(question)) event.preventDefault();
  });
})();
