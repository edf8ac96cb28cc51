"""The app's endpoints, one router per resource; each route's path is in its decorator."""
