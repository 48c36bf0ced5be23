import type { Server } from 'node:http';
import { PerKeySlots } from '../../domain/per-key-slots';

/**
 * At most `max` open connections from one client address; one more is closed as it arrives. The
 * server would otherwise hold every connection a client opens and never uses until its header
 * timeout (a minute): twenty thousand of them took every file descriptor, so no one else could
 * connect, nor the service reach its own stores. Behind a load balancer (CP_TRUST_PROXY) every
 * connection comes from the balancer, whose own limits apply instead: no cap here.
 */
export function capConnectionsPerClient(server: Server, max: number): void {
  const open = new PerKeySlots(max);
  server.on('connection', (socket) => {
    const address = socket.remoteAddress ?? '';
    if (!open.take(address)) return void socket.destroy();
    socket.once('close', () => open.release(address));
  });
}
