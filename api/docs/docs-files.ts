import { dirname, join } from 'node:path';
import { readStaticFile, type StaticFile } from '../http/static-file';

const HTML = 'text/html; charset=utf-8';
const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

// Resolved like any dependency, so it is found from api/ under tsx and from dist/api/ alike.
const SWAGGER_UI_DIR = dirname(require.resolve('swagger-ui-dist/package.json'));

// Swagger UI's files change only with its version; a day's caching spares the 1.7 MB bundle.
const VENDOR_CACHE = 'public, max-age=86400';

const ours = (name: string, type: string): StaticFile =>
  readStaticFile(join(__dirname, 'assets', name), type);

const swaggerUi = (name: string, type: string): StaticFile =>
  readStaticFile(join(SWAGGER_UI_DIR, name), type, VENDOR_CACHE);

/** The API reference's files by path: our page and initializer, and only the Swagger UI files they load. */
export const loadDocsFiles = (): Map<string, StaticFile> =>
  new Map([
    ['/docs', ours('docs.html', HTML)],
    ['/docs/assets/docs.js', ours('docs.js', JS)],
    ['/docs/assets/swagger-ui.css', swaggerUi('swagger-ui.css', CSS)],
    ['/docs/assets/swagger-ui-bundle.js', swaggerUi('swagger-ui-bundle.js', JS)],
    ['/docs/assets/favicon-32x32.png', swaggerUi('favicon-32x32.png', 'image/png')],
  ]);

/** The service's front page (GET /). */
export const loadIndexPage = (): StaticFile => ours('index.html', HTML);
