/* The print view's Print button. */
"use strict";
document.getElementById("print").addEventListener("click", function () { window.print(); });
