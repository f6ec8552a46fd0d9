// common.mjs - what the end-to-end scripts of this directory share: their
// argument reader and the loopback port helpers.
import { createServer, connect } from 'node:net';

// The value after `name` on the command line, or `dflt`.
export function arg(name, dflt) {
	const i = process.argv.indexOf(name);
	return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : dflt;
}

// A loopback port the OS says is free now.
export async function freePort() {
	return new Promise((resolve, reject) => {
		const s = createServer();
		s.on('error', reject);
		s.listen(0, '127.0.0.1', () => {
			const { port } = s.address();
			s.close(() => resolve(port));
		});
	});
}

// Whether something accepts connections on 127.0.0.1:port.
export function accepts(port) {
	return new Promise((resolve) => {
		const c = connect(port, '127.0.0.1');
		c.on('connect', () => { c.destroy(); resolve(true); });
		c.on('error', () => resolve(false));
	});
}
