/* /docs: Swagger UI over the app's OpenAPI schema (templates/docs.html names it). No validator badge: it would send
   the schema's address to validator.swagger.io. */
document.addEventListener("DOMContentLoaded", function () {
  "use strict";
  var root = document.getElementById("swagger-ui");
  if (!root || typeof SwaggerUIBundle !== "function") return;
  SwaggerUIBundle({
    url: root.getAttribute("data-openapi"),
    dom_id: "#swagger-ui",
    validatorUrl: null,
    layout: "BaseLayout",
    deepLinking: false, // its links sit inside each operation's button (nested controls: axe-core's nested-interactive)
    presets: [SwaggerUIBundle.presets.apis],
  });
});
