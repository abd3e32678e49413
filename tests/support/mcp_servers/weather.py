"""A small real MCP server (stdio) with two atomic weather tools.

`geocode_city` deliberately answers the bare name "Ningde" with a village in Tibet
(the ambiguity reported in ../shared/notes/loop.md); "Ningde City" gives the city in
Fujian. `get_weather_by_coords` answers from a fixed table so tests are repeatable.
Run: python -m tests.support.mcp_servers.weather  (or: --http PORT)
"""
from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

PLACES = {
    "ningde": {"name": "Ningde (village)", "region": "Tibet", "lat": 29.65, "lon": 91.1},
    "ningde city": {"name": "Ningde", "region": "Fujian", "lat": 26.66, "lon": 119.55},
    "paris": {"name": "Paris", "region": "Ile-de-France", "lat": 48.86, "lon": 2.35},
    "london": {"name": "London", "region": "England", "lat": 51.51, "lon": -0.13},
}
WEATHER = {(29.65, 91.1): (-3.0, "snow"), (26.66, 119.55): (24.5, "light rain"),
           (48.86, 2.35): (12.0, "cloudy"), (51.51, -0.13): (9.5, "drizzle")}

server = MCPServer("weather", log_level="ERROR")


@server.tool()
def geocode_city(city: str) -> dict:
    """Find the latitude and longitude of a city by name."""
    place = PLACES.get(city.strip().lower())
    if place is None:
        raise ToolError(f"no place called {city!r}")
    return place


@server.tool()
def get_weather_by_coords(lat: float, lon: float) -> dict:
    """Current weather (temperature in Celsius and conditions) at a latitude/longitude."""
    for (plat, plon), (temp, sky) in WEATHER.items():
        if abs(plat - lat) < 0.05 and abs(plon - lon) < 0.05:
            return {"temperature_c": temp, "conditions": sky}
    return {"temperature_c": 15.0, "conditions": "clear"}


def main(argv: list[str]) -> None:
    if len(argv) > 1 and argv[0] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(argv[1]))
    else:
        server.run()


if __name__ == "__main__":
    main(sys.argv[1:])
