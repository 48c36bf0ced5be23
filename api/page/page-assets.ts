import { join } from 'node:path';
import { readStaticFile } from '../http/static-file';

const read = (name: string, type: string) => readStaticFile(join(__dirname, 'assets', name), type);

/** The page's files, read once at start: no template, nothing from a request is ever spliced in. */
export const loadPageAssets = () => ({
  shell: read('index.html', 'text/html; charset=utf-8'),
  script: read('app.js', 'text/javascript; charset=utf-8'),
  style: read('app.css', 'text/css; charset=utf-8'),
  icon: read('favicon.svg', 'image/svg+xml'),
});
