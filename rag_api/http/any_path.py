"""`{name:any}`: a path parameter that takes the rest of the path, line breaks included.

Starlette's `{name:path}` is `.*`, which stops at a line break: a model or file name with an
encoded %0A or %0D matched no route, so it got a generic "no route" 404 (in the hub's shape even on
the OpenAI routes) instead of the route's own answer, an unknown model or an invalid file name.
Importing this module registers the convertor; the routes that use it import ANY.
"""

from __future__ import annotations

from starlette.convertors import PathConvertor, register_url_convertor


class AnyPathConvertor(PathConvertor):
    regex = "(?s:.*)"  # `.` matches line breaks too


ANY = "any"  # the convertor's name: "/models/{model:" + ANY + "}"
register_url_convertor(ANY, AnyPathConvertor())
