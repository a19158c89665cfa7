// A JSON-RPC 2.0 client over the console's WebSocket (`rpc` beside the page, opened with the
// session cookie). It reconnects after a drop, waiting longer each time, and says so with
// `open` and `close` events; calls made while it is down wait for the next connection. It
// keeps the latest `seq` of each run's notifications, so that after a reconnect `replay`
// hands the handlers what was missed meanwhile.

export class Rpc extends EventTarget {
  constructor() {
    super();
    const url = new URL('rpc', location.href);
    url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    this.url = url.href;
    this.nextId = 1;
    this.pending = new Map();
    this.handlers = new Map();
    this.retries = 0;
    this.stopped = false;
    this.waiting = [];
    this.seqs = new Map();
    this.open();
  }

  open() {
    const socket = new WebSocket(this.url);
    this.socket = socket;
    socket.addEventListener('open', () => {
      this.retries = 0;
      for (const resolve of this.waiting.splice(0)) resolve(socket);
      this.dispatchEvent(new Event('open'));
    });
    socket.addEventListener('message', (event) => this.receive(event.data));
    socket.addEventListener('close', () => {
      for (const { reject } of this.pending.values()) reject(new Error('connection lost'));
      this.pending.clear();
      this.dispatchEvent(new Event('close'));
      if (!this.stopped) {
        const wait = Math.min(30000, 500 * 2 ** this.retries++);
        setTimeout(() => { if (!this.stopped) this.open(); }, wait);
      }
    });
  }

  receive(text) {
    let message;
    try { message = JSON.parse(text); } catch { return; }
    if (message.id !== undefined && message.id !== null && this.pending.has(message.id)) {
      const { resolve, reject } = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.error) reject(Object.assign(new Error(message.error.message), { code: message.error.code }));
      else resolve(message.result);
    } else if (typeof message.method === 'string') {
      this.deliver(message);
    }
  }

  // Hands a notification to its handlers, once: a numbered one not above the run's latest
  // seq was delivered already.
  deliver(message) {
    const params = message.params ?? {};
    if (typeof params.run === 'string' && typeof params.seq === 'number') {
      if (params.seq <= (this.seqs.get(params.run) ?? 0)) return;
      this.seqs.set(params.run, params.seq);
    }
    for (const handler of this.handlers.get(message.method) ?? []) handler(params);
  }

  // Delivers the notifications of each run seen that came while the connection was down
  // (`run/replay`); resolves to the runs whose missed notifications the server no longer
  // keeps, or which it does not know on this connection.
  async replay() {
    const lost = [];
    for (const [run, since] of [...this.seqs]) {
      try {
        const { notifications } = await this.call('run/replay', { run, since });
        notifications.forEach((message) => this.deliver(message));
      } catch {
        lost.push(run);
      }
    }
    return lost;
  }

  // The result of `method`, or its JSON-RPC error as an Error with `code`.
  async call(method, params = {}) {
    const socket = this.socket.readyState === WebSocket.OPEN
      ? this.socket
      : await new Promise((resolve) => this.waiting.push(resolve));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      socket.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  // Calls `handler` with each notification `method`'s params; returns how to stop.
  on(method, handler) {
    const list = this.handlers.get(method) ?? new Set();
    list.add(handler);
    this.handlers.set(method, list);
    return () => list.delete(handler);
  }

  close() {
    this.stopped = true;
    this.socket.close();
  }
}
