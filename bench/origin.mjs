// The benchmark's origin: answers every request 200 at once. Run as its own process so it
// does not share an event loop with the load generator. Prints its port on stdout.
import http from 'node:http';

const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${server.address().port}\n`);
});
