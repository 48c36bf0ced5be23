/* The API reference: Swagger UI over this service's own OpenAPI document, with everything served
 * from this origin. validatorUrl: null keeps it from sending the document to swagger.io. */
/* global window, SwaggerUIBundle */
'use strict';

window.ui = SwaggerUIBundle({
  url: '/v1/openapi.json',
  dom_id: '#ui',
  deepLinking: true,
  validatorUrl: null,
});
