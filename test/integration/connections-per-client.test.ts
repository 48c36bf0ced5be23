import { connect, type Socket } from 'node:net';
import { startTestApp, type TestApp } from '../support/test-app';

/** One client address holds at most CP_MAX_CONNECTIONS_PER_CLIENT open connections. */
const opened: Socket[] = [];

async function open(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  opened.push(socket);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  return socket;
}

/** Whether the server closed the socket within `ms` (it never sent anything on it). */
const closedWithin = (socket: Socket, ms: number) =>
  new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });

/** An HTTP request written on an open socket, and the status line it gets. */
function statusLine(socket: Socket): Promise<string> {
  socket.write('GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  return new Promise((resolve) =>
    socket.once('data', (d: Buffer) => resolve(d.toString().split('\r\n')[0] ?? '')),
  );
}

afterEach(() => {
  for (const s of opened.splice(0)) s.destroy();
});

describe('directly reached', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { CP_MAX_CONNECTIONS_PER_CLIENT: '5' } });
  });
  afterAll(() => app.close());

  it("closes a client's connection past the cap as it arrives, and takes one again once another closed", async () => {
    const held = await Promise.all(Array.from({ length: 5 }, () => open(app.http.baseUrl)));
    const extra = await open(app.http.baseUrl);
    expect(await closedWithin(extra, 2_000)).toBe(true);

    held[0]?.destroy();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const next = await open(app.http.baseUrl);
    expect(await statusLine(next)).toBe('HTTP/1.1 200 OK');
  });
});

describe('behind a proxy (CP_TRUST_PROXY)', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { CP_MAX_CONNECTIONS_PER_CLIENT: '5', CP_TRUST_PROXY: 'true' } });
  });
  afterAll(() => app.close());

  it('caps nothing: every connection comes from the balancer', async () => {
    await Promise.all(Array.from({ length: 5 }, () => open(app.http.baseUrl)));
    const extra = await open(app.http.baseUrl);
    expect(await statusLine(extra)).toBe('HTTP/1.1 200 OK');
  });
});
