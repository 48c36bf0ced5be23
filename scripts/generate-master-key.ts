// Prints a new CP_MASTER_KEY (base64 of 32 random bytes) for production configuration.
import { randomBytes } from 'node:crypto';

console.log(randomBytes(32).toString('base64'));
