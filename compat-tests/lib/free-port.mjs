import net from 'node:net';

/**
 * Asks the kernel for an unused loopback port by binding port 0, then releases it.
 * Another process could take the port before the caller binds it; on a test machine
 * that race is rare enough, and callers that care retry on EADDRINUSE.
 */
export function freePort(host = '127.0.0.1') {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const { port } = server.address();
      server.close((err) => (err ? reject(err) : resolve(port)));
    });
  });
}
