// A JSON-RPC 2.0 client over the console's WebSocket (`rpc` beside the page, opened with the
// session cookie). It reconnects after a drop, waiting longer each time, and says so with
// `open` and `close` events; calls made while it is down wait for the next connection.

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
      for (const handler of this.handlers.get(message.method) ?? []) handler(message.params ?? {});
    }
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
